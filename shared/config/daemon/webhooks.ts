import { checkKeys, int, oneOf, type YamlMap } from "../read.ts";
import { secretSource } from "../secrets.ts";
import type { ConfigFile } from "../source.ts";
import type { DaemonSettings, VerifyKind, WebhookSource } from "../types.ts";
import { checkName, child, entries, NAME } from "./read-helpers.ts";

export const DEFAULT_MAX_BODY_BYTES = 1_048_576;
export const VERIFY_KINDS: readonly VerifyKind[] = ["bearer", "codehost", "tracker"];

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
    checkKeys(f, raw, path, ["verify", "secret", "secret_ref"]);
    const verify = oneOf(f, raw, "verify", path, VERIFY_KINDS, {
      required: true,
      hint: " - bearer serves trigger.webhook, codehost serves trigger.codehost, tracker serves trigger.tracker",
    });
    const secret = secretSource(f, raw, path, {
      expectedRef: `webhook/${name}`,
      howToStore: `store it with "svc setup webhook ${name} --secret-env <ENV_NAME>"`,
    });
    if (verify && secret) sources[name] = { name, verify, secret };
  }
  return { maxBodyBytes, sources };
}
