/**
 * Escaping by construction: every value interpolated into an `html` template is escaped unless it
 * is itself the result of `html` (or of `trusted`, for markup svc wrote). A payload can therefore
 * only ever appear as text, whatever it contains.
 */
export class SafeHtml {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

type Interpolated = SafeHtml | string | number | boolean | null | undefined | readonly Interpolated[];

function render(value: Interpolated): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): SafeHtml {
  let out = strings[0]!;
  for (let index = 0; index < values.length; index++) out += render(values[index]!) + strings[index + 1]!;
  return new SafeHtml(out);
}

/** Markup written by svc itself (never a value from a request or the database). */
export function trusted(text: string): SafeHtml {
  return new SafeHtml(text);
}
