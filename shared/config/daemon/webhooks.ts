import { bool, checkKeys, int, oneOf, type YamlMap } from "../read.ts";
import { secretSource } from "../secrets.ts";
import { SIGNING_SECRET_SHAPE, signingKey } from "../signing-secret.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";
import type { DaemonSettings, VerifyKind, WebhookSource } from "../types.ts";
import { checkName, child, entries, NAME } from "./read-helpers.ts";

export const DEFAULT_MAX_BODY_BYTES = 1_048_576;
export const VERIFY_KINDS: readonly VerifyKind[] = ["bearer", "codehost", "tracker", "gitlab"];

/** How the stored-secret name of a gitlab source's signing token ends (`svc setup webhook <name> --signing`). */
export const SIGNING_SECRET_REF_SUFFIX = "/signing-secret";

export function signingSecretRef(source: string): string {
  return `webhook/${source}${SIGNING_SECRET_REF_SUFFIX}`;
}

/**
 * Whether the sender of a run's event is of the team as far as its source can tell (a replay
 * judged as its original): a bearer (`webhook`) or tracker event only when its source declares
 * `trusted_senders: true`; a code-host event always, as its author is judged from the event itself
 * (the run's `outsider`); a fire or a schedule always, as an operator or svc sent it.
 */
export function sourceTrustsSender(
  sources: Readonly<Record<string, WebhookSource>>,
  event: { kind: string; source: string },
): boolean {
  if (event.kind !== "webhook" && event.kind !== "tracker") return true;
  return Object.hasOwn(sources, event.source) && sources[event.source]!.trustedSenders === true;
}

export function readWebhooks(f: ConfigFile, root: YamlMap): DaemonSettings["webhooks"] {
  const webhooks = child(f, root, "webhooks", []) ?? {};
  checkKeys(f, webhooks, ["webhooks"], ["sources", "max_body_bytes"]);
  const maxBodyBytes =
    int(f, webhooks, "max_body_bytes", ["webhooks"], { min: 1, max: 1_073_741_824 }) ??
    DEFAULT_MAX_BODY_BYTES;
  const sources: Record<string, WebhookSource> = {};
  for (const [name, raw] of entries(f, webhooks, "sources", ["webhooks"])) {
    const path = ["webhooks", "sources", name];
    if (!checkName(f, path, name, NAME, "webhook source")) continue;
    checkKeys(f, raw, path, [
      "verify",
      "secret",
      "secret_ref",
      "signing_secret",
      "signing_secret_ref",
      "trusted_senders",
    ]);
    const verify = oneOf(f, raw, "verify", path, VERIFY_KINDS, {
      required: true,
      hint: " - bearer serves trigger.webhook, codehost (GitHub) and gitlab serve trigger.codehost, tracker serves trigger.tracker",
    });
    const secret = secretSource(f, raw, path, {
      expectedRef: `webhook/${name}`,
      howToStore: `store it with "svc setup webhook ${name} --secret-env <ENV_NAME>"`,
    });
    const signing = readSigningSecret(f, raw, path, name, verify);
    const trustedSenders = readTrustedSenders(f, raw, path, verify);
    if (verify && secret && signing !== null && trustedSenders !== null)
      sources[name] = {
        name,
        verify,
        secret,
        ...(signing ? { signingSecret: signing } : {}),
        ...(trustedSenders ? { trustedSenders } : {}),
      };
  }
  return { maxBodyBytes, sources };
}

/**
 * `trusted_senders: true` says whoever can send to a bearer or tracker source is of the team, so the
 * notes its runs submit are trusted; such a payload names no author svc could judge. A code host's
 * payload does (its author association, GitLab's members API), so there the key would only
 * mislead: refused, as null, so the source is left out rather than started believing it.
 */
function readTrustedSenders(
  f: ConfigFile,
  raw: YamlMap,
  path: KeyPath,
  verify: VerifyKind | undefined,
): boolean | null {
  const value = bool(f, raw, "trusted_senders", path);
  if (value === undefined) return false;
  if (verify === "bearer" || verify === "tracker" || verify === undefined) return value;
  f.report(
    [...path, "trusted_senders"],
    "invalid_value",
    `"${formatPath([...path, "trusted_senders"])}" applies to bearer and tracker sources only - a ${verify} event states its author, whose association decides whether its run's notes are trusted; remove the key`,
  );
  return null;
}

/**
 * A gitlab source's optional signing token: undefined when it has none, null when what is written
 * is wrong (reported), so the source is left out rather than started without the check it asked for.
 */
function readSigningSecret(
  f: ConfigFile,
  raw: YamlMap,
  path: KeyPath,
  name: string,
  verify: VerifyKind | undefined,
): WebhookSource["signingSecret"] | null {
  const given = ["signing_secret", "signing_secret_ref"].filter(
    (key) => raw[key] !== undefined && raw[key] !== null,
  );
  if (given.length === 0) return undefined;
  if (verify !== "gitlab") {
    if (verify)
      f.report(
        [...path, given[0]!],
        "invalid_value",
        `"${formatPath([...path, given[0]!])}" is GitLab's signing token and only a "verify: gitlab" source checks it - remove it, or set verify: gitlab if GitLab sends these deliveries`,
      );
    return null;
  }
  const signing = secretSource(f, raw, path, {
    secretKey: "signing_secret",
    refKey: "signing_secret_ref",
    expectedRef: signingSecretRef(name),
    howToStore: `store it with "svc setup webhook ${name} --signing --secret-env <ENV_NAME>"`,
  });
  if (!signing) return null;
  // a stored token is checked when the ingress reads it at start-up
  if (signing.kind === "inline" && !signingKey(signing.value)) {
    f.report(
      [...path, "signing_secret"],
      "invalid_value",
      `"${formatPath([...path, "signing_secret"])}" must be ${SIGNING_SECRET_SHAPE} - copy it again from the GitLab webhook's "Signing token" field`,
    );
    return null;
  }
  return signing;
}
