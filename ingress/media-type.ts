const JSON_MEDIA_TYPE = /^application\/json\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;

/** `application/json`, with no charset or UTF-8 (the only encoding JSON on the wire may use, RFC 8259). */
export function isJsonContentType(header: string | undefined): boolean {
  if (!header || !JSON_MEDIA_TYPE.test(header.trim())) return false;
  const charset = CHARSET.exec(header)?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}

/**
 * A Content-Type as an error message may quote it: printable ASCII only, at most 100 characters,
 * or `none` when the request sent no header.
 */
export function describeContentType(header: string | undefined): string {
  if (header === undefined || header.trim() === "") return "none";
  const text = header.trim().replace(/[^\x20-\x7e]/g, "?");
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}
