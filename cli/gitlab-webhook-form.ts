/**
 * What `svc setup webhook` prints for a `verify: gitlab` source: GitLab's webhook form as the
 * operator fills it in, from daemon.yaml read as written.
 */
import { readText } from "../shared/config/config-files.ts";
import { ConfigFile, parseYaml } from "../shared/config/source.ts";
import type { ConfigProblem } from "../shared/config/types.ts";
import { asMap, envVariables, httpUrl, substituted } from "./daemon-yaml.ts";

/** GitLab's webhook triggers svc reads (ingress/webhooks/gitlab/event.ts): push, tag_push, note, merge_request. */
const GITLAB_TRIGGERS = ["Push events", "Tag push events", "Comments", "Merge request events"];

/** How daemon.yaml gives a secret: the stored name, the variables it substitutes, written out, or not at all. */
type SecretGiven =
  | { kind: "stored"; name: string }
  | { kind: "env"; names: string[] }
  | { kind: "inline" }
  | { kind: "none" };

interface Configured {
  /** `webhooks.sources.<name>` as daemon.yaml writes it, when it is there */
  source?: { verify?: string; secret: SecretGiven; signing: SecretGiven };
  /** `server.public_url` with its `${NAME}` substituted; undefined when unset or not an http(s) URL */
  publicUrl?: string;
}

/**
 * What daemon.yaml says of the source and the public URL, read as written: this command must work
 * where the configuration does not load whole (the daemon's variables unset in this shell, a
 * pipeline being written), and it names secrets, never reads them.
 */
export async function configuredSource(
  dir: string,
  name: string,
  env: NodeJS.ProcessEnv,
): Promise<Configured> {
  const text = await readText(dir, "daemon.yaml");
  if (text.kind !== "text") return {};
  const problems: ConfigProblem[] = [];
  const data = parseYaml(new ConfigFile("daemon.yaml", problems), text.text)?.data;
  const root = asMap(data);
  const server = asMap(root?.server);
  const source = asMap(asMap(asMap(root?.webhooks)?.sources)?.[name]);
  const publicUrl = httpUrl(substituted(server?.public_url, env));
  return {
    ...(source
      ? {
          source: {
            ...(typeof source.verify === "string" ? { verify: source.verify } : {}),
            secret: given(source.secret, source.secret_ref),
            signing: given(source.signing_secret, source.signing_secret_ref),
          },
        }
      : {}),
    ...(publicUrl ? { publicUrl } : {}),
  };
}

function given(inline: unknown, ref: unknown): SecretGiven {
  if (typeof ref === "string" && ref) return { kind: "stored", name: ref };
  if (typeof inline !== "string" || !inline) return { kind: "none" };
  const names = envVariables(inline);
  return names.length ? { kind: "env", names } : { kind: "inline" };
}

/**
 * GitLab's webhook form for the source, one field a line. Secrets are named (the variable just
 * stored, the stored secret, the variable daemon.yaml reads), never printed: this command generates
 * none, so there is none the operator does not already hold.
 */
export function gitlabForm(
  source: string,
  configured: Configured,
  stored: { envName: string; name: string; signing: boolean } | undefined,
): string[] {
  const key = `webhooks.sources.${source}`;
  const url = configured.publicUrl
    ? `${configured.publicUrl}/webhooks/${source}`
    : `<server.public_url>/webhooks/${source}`;
  const lines = [
    "GitLab webhook form (the project's or group's Settings → Webhooks → Add new webhook):",
    `  URL               ${url}`,
  ];
  if (!configured.publicUrl)
    lines.push(
      "                    server.public_url is not set in daemon.yaml: use the https address GitLab reaches svc's ingress at",
    );
  const justStored = (what: string) =>
    `the value of ${stored!.envName} you just stored as ${stored!.name}${what}`;
  const secret =
    stored && !stored.signing
      ? justStored("")
      : describe(
          configured.source?.secret,
          `${key}.secret`,
          `svc setup webhook ${source} --secret-env <ENV_NAME>`,
        );
  lines.push(`  Secret token      ${secret}`);
  const signing =
    stored?.signing === true
      ? justStored(" (whsec_...)")
      : configured.source && configured.source.signing.kind !== "none"
        ? describe(configured.source.signing, `${key}.signing_secret`, "")
        : `leave it empty - ${key} checks no signing token (svc setup webhook ${source} --signing --secret-env <ENV_NAME> stores one)`;
  lines.push(`  Signing token     ${signing}`);
  lines.push(`  Trigger           tick ${GITLAB_TRIGGERS.join(", ")} (Push events: all branches)`);
  lines.push(
    `  SSL verification  tick Enable SSL verification${url.startsWith("http://") ? " - and serve svc over https: over http GitLab sends the secret token in clear" : ""}`,
  );
  lines.push(
    "Then Add webhook. Each delivery is listed under the webhook's Recent events: svc answers 202, or 401 when a token does not match.",
  );
  return lines;
}

/** Where the secret is, for the operator to paste it from; the secret itself never. */
function describe(secret: SecretGiven | undefined, at: string, howToStore: string): string {
  switch (secret?.kind) {
    case "stored":
      return `the secret stored as ${secret.name} (${at}_ref) - svc does not print stored secrets: paste the value you stored, or store a new one and paste that`;
    case "env":
      return `the value of ${secret.names.length === 1 ? "the environment variable" : "the environment variables"} ${secret.names.join(", ")} (${at}) as the daemon's environment sets it`;
    case "inline":
      return `the value of ${at} in daemon.yaml`;
    default:
      return `the secret of ${at.replace(/\.secret$/, "")} - none is configured yet${howToStore ? `: store one with ${howToStore}` : ""}`;
  }
}
