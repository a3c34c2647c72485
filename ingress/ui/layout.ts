import { html, type SafeHtml } from "./html.ts";

/** The frame of every page: our stylesheet, the navigation and a sign-out form (no script anywhere). */
export function page(title: string, body: SafeHtml, options: { signedIn?: boolean } = {}): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · svc</title>
<link rel="stylesheet" href="/ui/style.css">
</head>
<body>
<header class="top">
<span class="brand">svc</span>
<a href="/ui/triggers">Triggers</a>
<a href="/ui/evals">Evals</a>
<a href="/ui/costs">Costs</a>
${
  options.signedIn
    ? html`<form method="post" action="/ui/logout"><button type="submit">Sign out</button></form>`
    : ""
}
</header>
<main>
${body}
</main>
</body>
</html>
`.text;
}

export function loginPage(options: { error?: string; next?: string }): string {
  return page(
    "Sign in",
    html`<h1>Sign in</h1>
<p class="muted">Paste an API token with the scope <code>triggers:read</code> (triggers and traces) or <code>evals:write</code> (evals). It is kept in a cookie only these pages can use.</p>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ""}
<form class="login" method="post" action="/ui/login">
<label>Token <input type="password" name="token" autocomplete="current-password" required></label>
<input type="hidden" name="next" value="${options.next ?? "/ui/triggers"}">
<button type="submit">Sign in</button>
</form>`,
  );
}

export function messagePage(title: string, message: string, signedIn: boolean): string {
  return page(title, html`<h1>${title}</h1><p class="error" role="alert">${message}</p>`, { signedIn });
}

export function statusBadge(status: unknown): SafeHtml {
  const text = String(status ?? "unknown");
  const modifier = /^[a-z_]+$/.test(text) ? text : "unknown";
  return html`<span class="status status-${modifier}">${text}</span>`;
}

export function diagnosticBlock(diagnostic: unknown): SafeHtml | "" {
  if (!diagnostic || typeof diagnostic !== "object") return "";
  const { code, message } = diagnostic as { code?: unknown; message?: unknown };
  return html`<div class="diagnostic"><code>${String(code ?? "")}</code> ${String(message ?? "")}</div>`;
}

export function when(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  return value === null || value === undefined ? "—" : String(value);
}

export function durationBetween(start: unknown, end: unknown): string {
  if (!(start instanceof Date) || !(end instanceof Date)) return "—";
  const ms = end.getTime() - start.getTime();
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
