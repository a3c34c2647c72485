import type { GithubSetupResult, GithubSetupSession } from "../../db/github-setup.ts";
import { APP_EVENTS, APP_PERMISSIONS, type appManifest } from "../../shared/codehost/github-manifest.ts";
import { codehostWebBase } from "../../shared/config/daemon/repos.ts";
import { html, type SafeHtml } from "./html.ts";
import { messagePage, page } from "./layout.ts";

/**
 * The pages of `svc setup github` (ingress/ui/setup-github.ts): none waiting, one already used, the
 * one button that sends GitHub svc's manifest, and what was made.
 */

export function noSetupPage(session: GithubSetupSession | null): [number, string] {
  if (session?.status === "waiting")
    return [
      410,
      messagePage(
        "The setup expired",
        "svc setup github waited an hour, as long as GitHub's code lives; run it again for a new page",
        false,
      ),
    ];
  if (session?.status === "done" && session.result) return [200, donePage(session.result)];
  return [
    404,
    messagePage(
      "No setup is waiting",
      "run svc setup github on the daemon's host: it starts the setup, names this page and waits for GitHub",
      false,
    ),
  ];
}

/** The answer to a redirect (with the right state) for a setup that is not waiting any more. */
export function usedSetupPage(session: GithubSetupSession): [number, string] {
  const unchanged = "nothing was changed";
  if (session.status === "done")
    return [
      409,
      messagePage(
        "Already set up",
        `this setup already finished with the App ${session.result?.slug ?? ""}: its code was used once; ${unchanged}`,
        false,
      ),
    ];
  if (session.status === "failed")
    return [
      409,
      messagePage(
        "The setup failed",
        `${session.error ?? "this setup failed"}; run svc setup github again`,
        false,
      ),
    ];
  if (session.status === "exchanging")
    return [
      409,
      messagePage("In progress", `svc is already exchanging this setup's code; ${unchanged}`, false),
    ];
  return [
    410,
    messagePage(
      "The setup expired",
      `GitHub's code and svc's setup live one hour; ${unchanged} - run svc setup github again`,
      false,
    ),
  ];
}

export function setupPage(view: {
  action: string;
  manifest: ReturnType<typeof appManifest>;
  org: string | undefined;
  apiUrl: string;
  expiresAt: string;
}): string {
  const host = new URL(codehostWebBase(view.apiUrl)).host;
  const owner = view.org
    ? html`the organisation <code>${view.org}</code> on ${host}`
    : html`your account on ${host}`;
  const permissions: SafeHtml[] = Object.entries(APP_PERMISSIONS).map(
    ([name, level]) => html`<tr><td><code>${name}</code></td><td>${level}</td></tr>`,
  );
  return page(
    "Create the GitHub App",
    html`<h1>Create svc's GitHub App</h1>
<p>The button sends svc's App manifest to GitHub, which registers the App for ${owner}. GitHub then
sends you back here: svc stores the App's private key and webhook secret in its database, encrypted
with the instance key, and writes <code>codehost.app</code> and <code>webhooks.sources.github</code>
into daemon.yaml.</p>
<section class="card">
<h2>Permissions</h2>
<table class="permissions"><tbody>${permissions}</tbody></table>
<h2>Events</h2>
<p class="events">${APP_EVENTS.map((event, index) => html`${index ? ", " : ""}<code>${event}</code>`)}</p>
<h2>Webhook</h2>
<p><code>${view.manifest.hook_attributes.url}</code>, with a secret GitHub generates</p>
</section>
<form method="post" action="${view.action}" id="create-app">
<input type="hidden" name="manifest" value="${JSON.stringify(view.manifest)}">
<button type="submit">Create the GitHub App on ${host}</button>
</form>
<p class="muted">This page works until ${view.expiresAt}, while svc setup github waits.</p>`,
  );
}

export function donePage(result: GithubSetupResult): string {
  return page(
    "GitHub App created",
    html`<h1>GitHub App ${result.name} created</h1>
<dl class="facts">
<dt>App</dt><dd><a href="${result.htmlUrl}">${result.slug}</a> (id ${result.appId})${result.owner ? html`, owned by ${result.owner}` : ""}</dd>
<dt>Stored</dt><dd>${result.secrets.map((name, index) => html`${index ? ", " : ""}<code>${name}</code>`)}, encrypted with the instance key</dd>
<dt>Written</dt><dd><code>codehost.app</code> and <code>webhooks.sources.github</code> in <code>${result.file}</code></dd>
</dl>
<h2>Next</h2>
<ol>
<li><a id="install" href="${result.installUrl}">Install the App</a> on the repositories svc works on.</li>
<li>Restart the daemon so it reads the new configuration: <code>svc config validate &amp;&amp; svc daemon restart</code>.</li>
</ol>`,
  );
}
