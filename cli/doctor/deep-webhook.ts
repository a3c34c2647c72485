import { createPool } from "../../db/connect.ts";
import { AppAuthError, appTokens } from "../../shared/codehost/app-tokens.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { ConfigProblem, ConfigSnapshot } from "../../shared/config/types.ts";
import { connectDaemon, DaemonError, DaemonUnreachableError } from "../client.ts";
import { keyOf } from "./codehost-app.ts";
import type { CheckOutcome, DoctorCheck, DoctorContext } from "./types.ts";

/** One delivery of `GET /app/hook/deliveries`, in GitHub's shape (the fields read here). */
export interface HookDelivery {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  duration: number;
  status: string;
  status_code: number;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository_id: number | null;
}

/** deliveries asked for: GitHub lists the newest first */
const ASKED = 10;
/** svc's triggers of a source searched through the daemon's API when the database is not at hand */
const DAEMON_PAGE = 500;

/** svc's record of one delivery: the trigger the ingress stored with GitHub's delivery id. */
interface Recorded {
  id: string;
  source: string;
  eventName: string;
}

/**
 * `svc doctor --deep`, the webhook's link: GitHub's newest delivery to the App's webhook
 * (`GET /app/hook/deliveries`, as the App) got a 2xx answer, and svc holds the trigger the ingress
 * stored for it. The ingress stores every verified delivery, GitHub's `ping` included, as a
 * trigger with `X-GitHub-Delivery` as its delivery id (ingress/webhooks/intake.ts), so svc's own
 * record is the row of `svc.triggers` with that id from a `verify: codehost` source: read from
 * SVC_DATABASE_URL, else from the daemon's `GET /triggers`. No delivery is
 * `webhook_no_delivery`; a non-2xx answer `webhook_delivery_failed`, with the fix its status
 * points at; a 2xx answer svc has no record of `webhook_not_recorded` (the Webhook URL reaches
 * another server); a record that cannot be read is the warning `webhook_record_unread`.
 */
export const webhookDeliveryCheck: DoctorCheck = {
  name: "webhook",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration has errors", problems: [] };
    const { config } = loaded;
    const codehost = config.codehost;
    if (!codehost?.app || codehost.kind === "gitlab")
      return {
        status: "skipped",
        detail: "no codehost.app: GitHub lists the deliveries of an App's webhook only",
        problems: [],
      };
    const sources = Object.values(config.webhooks.sources)
      .filter((source) => source.verify === "codehost")
      .map((source) => source.name)
      .sort();
    const app = codehost.app;
    const problems: ConfigProblem[] = [];
    const file = new ConfigFile("daemon.yaml", problems);
    const url = webhookUrl(config, sources[0]);
    if (sources.length === 0) {
      file.report(
        ["webhooks", "sources"],
        "webhook_no_delivery",
        `no webhook source has "verify: codehost": svc refuses every delivery of GitHub App ${app.id} - add one (webhooks.sources.github: { verify: codehost, secret_ref: webhook/github }, stored with "svc setup webhook github --secret-env <ENV_NAME>") and set the App's Webhook URL to ${url}`,
      );
      return { status: "error", detail: "no verify: codehost source", problems };
    }
    let deliveries: HookDelivery[];
    try {
      const privateKey = await keyOf(ctx, app.privateKey);
      const tokens = appTokens({ apiUrl: codehost.apiUrl, appId: app.id, privateKey });
      deliveries = await tokens.asApp<HookDelivery[]>("GET", `/app/hook/deliveries?per_page=${ASKED}`);
    } catch (error) {
      if (!(error instanceof AppAuthError)) throw error;
      if (error.status === 404) {
        // GitHub's answer for an App with no webhook
        file.report(
          ["codehost", "app"],
          "webhook_no_delivery",
          `GitHub App ${app.id} has no webhook (${error.message}) - on the App's settings page tick "Active" under Webhook, set the Webhook URL to ${url} and its secret to the one of webhooks.sources.${sources[0]}`,
        );
        return { status: "error", detail: "the App has no webhook", problems };
      }
      return {
        status: "skipped",
        detail: `GitHub App ${app.id}'s deliveries cannot be read (see codehost-app): ${error.message}`,
        problems: [],
      };
    }
    const last = [...deliveries].sort((a, b) => Date.parse(b.delivered_at) - Date.parse(a.delivered_at))[0];
    if (!last) {
      file.report(
        ["codehost", "app"],
        "webhook_no_delivery",
        `GitHub has delivered nothing to the webhook of GitHub App ${app.id} yet - set the App's Webhook URL to ${url} with the secret of webhooks.sources.${sources[0]} (the App's settings page, "General"), then send its ping again ("Advanced" > "Recent Deliveries" > "Redeliver"), or install the App on a repository`,
      );
      return { status: "error", detail: "no delivery yet", problems };
    }
    const what = `${last.event}${last.action ? `.${last.action}` : ""} delivery ${last.guid} of ${last.delivered_at}`;
    if (last.status_code < 200 || last.status_code >= 300) {
      file.report(
        ["webhooks", "sources", sources[0]!],
        "webhook_delivery_failed",
        `GitHub's last ${what} did not reach svc: ${last.status_code ? `HTTP ${last.status_code}` : "no answer"} (${last.status}) - ${failureFix(last.status_code, url, sources, last.event)}; then redeliver it ("Advanced" > "Recent Deliveries" on the App's settings page)`,
      );
      return {
        status: "error",
        detail: `last delivery ${last.event} ${last.delivered_at}: ${last.status_code || last.status}`,
        problems,
      };
    }
    const record = await recordOf(ctx, last.guid, sources);
    if ("unread" in record) {
      file.report(
        ["webhooks", "sources", sources[0]!],
        "webhook_record_unread",
        `GitHub's last ${what} was answered ${last.status_code}, but svc's own record of it could not be read (${record.unread}) - set SVC_DATABASE_URL to the daemon's database, or run doctor where the daemon answers at SVC_DAEMON_URL with a token of triggers:read`,
        "warning",
      );
      return {
        status: "warning",
        detail: `last delivery ${last.event} ${last.delivered_at}: ${last.status_code}, svc's record not read`,
        problems,
      };
    }
    if (!record.found) {
      const pruned =
        Date.now() - Date.parse(last.delivered_at) > config.workspaces.checkoutRetentionDays * 86_400_000;
      file.report(
        ["webhooks", "sources", sources[0]!],
        "webhook_not_recorded",
        `GitHub's last ${what} was answered ${last.status_code}, but svc (${record.where}) holds no trigger with that delivery id from ${sources.map((name) => `webhooks.sources.${name}`).join(", ")}${pruned ? " (it is older than workspaces.checkoutRetentionDays, so it may have been pruned: redeliver it to be sure)" : ""} - the App's Webhook URL reaches another server than this svc: set it to ${url}, then redeliver it`,
        pruned ? "warning" : "error",
      );
      return {
        status: pruned ? "warning" : "error",
        detail: `last delivery ${last.event} ${last.delivered_at}: ${last.status_code}, not in svc`,
        problems,
      };
    }
    return {
      status: "ok",
      detail: `last delivery ${last.event} ${last.guid} ${last.delivered_at}: ${last.status_code}, recorded by svc as trigger ${record.found.id} (${record.found.source}, ${record.where})`,
      problems,
    };
  },
};

/** Where the App's webhook should point: the daemon's public address when daemon.yaml names it. */
function webhookUrl(config: ConfigSnapshot, source: string | undefined): string {
  const base = config.server.publicUrl ?? "https://<server.public_url>";
  return `${base}/webhooks/${source ?? "github"}`;
}

function failureFix(status: number, url: string, sources: string[], event: string): string {
  const secret = sources.map((name) => `webhooks.sources.${name}`).join(" or ");
  // the usual first run: GitHub pings an App the moment it is made, before the daemon's restart
  // gave it the secret svc setup github stored
  const first =
    event === "ping"
      ? "a ping sent when the App was created, before the daemon restarted with its secret, is refused so: redeliver it; if it is refused again, "
      : "";
  if (status === 401)
    return `svc refused its signature: ${first}the App's webhook secret is not the secret of ${secret} - set the same secret on both (the App's settings page, "Webhook secret"; svc setup webhook ${sources[0]} --secret-env <ENV_NAME>)`;
  if (status === 404 || status === 405)
    return `the Webhook URL names no route of svc's: set it to ${url} (or <public_url>/events)`;
  if (status === 413)
    return "the payload is larger than webhooks.max_body_bytes: raise it in daemon.yaml (and in any proxy in front)";
  if (status === 0)
    return `GitHub could not reach the Webhook URL (DNS, TLS, firewall or a stopped daemon): make ${url} reachable from GitHub`;
  if (status >= 500)
    return "svc (or a proxy in front of it) failed to store it: look at the daemon's log at that time (a 503 is a database that did not answer)";
  return `the Webhook URL should be ${url}`;
}

/** svc's trigger of the delivery `guid`, from the database or the daemon; `unread` when neither answers. */
async function recordOf(
  ctx: DoctorContext,
  guid: string,
  sources: string[],
): Promise<{ found: Recorded | undefined; where: string } | { unread: string }> {
  const url = ctx.env.SVC_DATABASE_URL?.trim();
  if (url) {
    const pool = createPool(url, { max: 1, applicationName: "svc-doctor" });
    try {
      const { rows } = await pool.query<Recorded>(
        `SELECT id, source, event_name AS "eventName" FROM svc.triggers
          WHERE delivery_id = $1 AND source = ANY($2::text[]) ORDER BY created_at LIMIT 1`,
        [guid, sources],
      );
      return { found: rows[0], where: "its database" };
    } catch (error) {
      return { unread: `the database at SVC_DATABASE_URL: ${(error as Error).message.split("\n")[0]}` };
    } finally {
      await pool.end().catch(() => {});
    }
  }
  try {
    const client = await connectDaemon(ctx.env);
    for (const source of sources) {
      const page = await client.get<{ triggers: (Recorded & { deliveryId: string | null })[] }>("/triggers", {
        source,
        limit: DAEMON_PAGE,
      });
      const found = page.triggers.find((trigger) => trigger.deliveryId === guid);
      if (found) return { found, where: `the daemon at ${client.url}` };
    }
    return { found: undefined, where: `the daemon at ${client.url}` };
  } catch (error) {
    if (error instanceof DaemonUnreachableError || error instanceof DaemonError)
      return { unread: `SVC_DATABASE_URL is not set and ${error.message}` };
    throw error;
  }
}
