import { randomUUID } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import type { FakeAppSpec, HookDelivery } from "./fake-github-app.ts";

let nextId = 12_000_000_001;

/** The ping GitHub sends an App's webhook when the App is made or its webhook changes. */
export function appPingPayload(app: FakeAppSpec): Record<string, unknown> {
  const hookId = 500_000 + app.id;
  return {
    zen: "Anything added dilutes everything else.",
    hook_id: hookId,
    hook: {
      type: "App",
      id: hookId,
      name: "web",
      active: true,
      events: ["issue_comment", "pull_request", "pull_request_review_comment", "push"],
      config: { content_type: "json", insecure_ssl: "0", url: app.webhook?.url ?? "" },
      updated_at: "2026-01-05T10:00:00Z",
      created_at: "2026-01-05T10:00:00Z",
      app_id: app.id,
      deliveries_url: "https://api.github.com/app/hook/deliveries",
    },
  };
}

/**
 * The webhook side of the fake GitHub App: `deliver` sends one event to the App's webhook as
 * GitHub's hookshot does (POST, JSON, `X-GitHub-Event`, `X-GitHub-Delivery` a fresh GUID,
 * `X-GitHub-Hook-ID`, the installation target headers, `X-Hub-Signature-256` over the body with
 * the webhook's secret), and records the delivery as `GET /app/hook/deliveries` lists it: the
 * answer's status code (0 when nothing answered), GitHub's status text ("OK", "Invalid HTTP
 * Response: 401", "failed to connect to host"), the duration in seconds.
 */
export async function deliver(
  app: FakeAppSpec,
  event: string,
  payload: Record<string, unknown>,
): Promise<HookDelivery> {
  if (!app.webhook) throw new Error(`the fake App ${app.id} has no webhook`);
  const body = JSON.stringify(payload);
  const guid = randomUUID();
  const started = performance.now();
  let status_code = 0;
  let status = "OK";
  try {
    const response = await fetch(app.webhook.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "GitHub-Hookshot/fake",
        "x-github-event": event,
        "x-github-delivery": guid,
        "x-github-hook-id": String(500_000 + app.id),
        "x-github-hook-installation-target-type": "integration",
        "x-github-hook-installation-target-id": String(app.id),
        "x-hub-signature-256": await sign(app.webhook.secret, body),
      },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    await response.arrayBuffer();
    status_code = response.status;
    if (!response.ok) status = `Invalid HTTP Response: ${response.status}`;
  } catch {
    status = "failed to connect to host";
  }
  const installation = payload.installation as { id?: number } | undefined;
  const repository = payload.repository as { id?: number } | undefined;
  const delivery: HookDelivery = {
    id: nextId++,
    guid,
    delivered_at: `${new Date().toISOString().slice(0, 19)}Z`,
    redelivery: false,
    duration: Math.round(performance.now() - started) / 1000,
    status,
    status_code,
    event,
    action: typeof payload.action === "string" ? payload.action : null,
    installation_id: installation?.id ?? null,
    repository_id: repository?.id ?? null,
    throttled_at: null,
  };
  app.deliveries ??= [];
  app.deliveries.push(delivery);
  return delivery;
}
