import type { SecretSource } from "../config/secret-source.ts";

export interface StoredSecretRef {
  /** the stored secret's name, e.g. `webhook/github` */
  name: string;
  /** where the snapshot refers to it, e.g. `webhooks.sources.github` */
  usedBy: string;
}

/** Every `{ kind: "stored" }` secret source under `value`, so a role resolves exactly the secrets it uses. */
export function storedSecretRefs(value: unknown, path: string[] = []): StoredSecretRef[] {
  if (typeof value !== "object" || value === null) return [];
  if (isStored(value)) {
    const usedBy = path.at(-1) === "secret" ? path.slice(0, -1) : path;
    return [{ name: value.name, usedBy: usedBy.join(".") }];
  }
  return Object.entries(value).flatMap(([key, inner]) => storedSecretRefs(inner, [...path, key]));
}

function isStored(value: object): value is Extract<SecretSource, { kind: "stored" }> {
  const candidate = value as { kind?: unknown; name?: unknown };
  return candidate.kind === "stored" && typeof candidate.name === "string" && Object.keys(value).length === 2;
}
