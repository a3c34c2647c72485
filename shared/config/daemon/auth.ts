import { unknownScopes } from "../../scopes.ts";
import { checkKeys, quote, str, strList, type YamlMap } from "../read.ts";
import { secretSource } from "../secrets.ts";
import type { ConfigFile } from "../source.ts";
import type { ApiTokenConfig, BrokerConfig, DaemonSettings } from "../types.ts";
import { child, entries, httpUrl } from "./read-helpers.ts";

export function readAuth(f: ConfigFile, root: YamlMap): DaemonSettings["auth"] {
  const auth = child(f, root, "auth", []);
  if (!auth) return null;
  checkKeys(f, auth, ["auth"], ["tokens", "broker"]);
  const tokens: Record<string, ApiTokenConfig> = {};
  for (const [name, raw] of entries(f, auth, "tokens", ["auth"])) {
    const path = ["auth", "tokens", name];
    checkKeys(f, raw, path, ["scopes", "secret", "secret_ref"]);
    const scopes = strList(f, raw, "scopes", path, {
      required: true,
      hint: " - list scopes such as [triggers:read, pipelines:invoke]",
    });
    for (const scope of unknownScopes(scopes ?? [])) {
      const index = scopes!.indexOf(scope);
      f.report(
        [...path, "scopes", index],
        "unknown_scope",
        `scope ${quote(scope)} of token "${name}" is outside the scope vocabulary, so the token will be refused on every route - use scopes such as workloads:read, triggers:read, pipelines:invoke, knowledge:read, admin or *`,
        "warning",
      );
    }
    const secret = secretSource(f, raw, path, {
      expectedRef: `token/${name}`,
    });
    if (scopes && secret) tokens[name] = { name, scopes, secret };
  }
  const broker = readBroker(f, auth);
  return broker ? { tokens, broker } : { tokens };
}

function readBroker(f: ConfigFile, auth: YamlMap): BrokerConfig | undefined {
  const raw = child(f, auth, "broker", ["auth"]);
  if (!raw) return undefined;
  const path = ["auth", "broker"];
  checkKeys(f, raw, path, ["issuer", "audience", "jwks_url", "public_key", "secret", "secret_ref"]);
  const issuer = str(f, raw, "issuer", path);
  const audience = str(f, raw, "audience", path);
  const keySources = ["jwks_url", "public_key", "secret", "secret_ref"].filter(
    (key) => raw[key] !== undefined && raw[key] !== null,
  );
  const jwks = keySources.includes("jwks_url") ? 1 : 0;
  const pem = keySources.includes("public_key") ? 1 : 0;
  const shared = keySources.includes("secret") || keySources.includes("secret_ref") ? 1 : 0;
  if (jwks + pem + shared !== 1) {
    f.report(
      path,
      "secret_source_conflict",
      `"auth.broker" must set exactly one of "jwks_url", "public_key" and "secret" (or "secret_ref") - ${keySources.length ? "keep one of them" : "add the key that verifies the broker's tokens"}`,
    );
    return undefined;
  }
  const broker: BrokerConfig = { ...(issuer ? { issuer } : {}), ...(audience ? { audience } : {}) };
  if (jwks) {
    const url = httpUrl(f, raw, "jwks_url", path, true);
    if (!url) return undefined;
    broker.jwksUrl = url;
  } else if (pem) {
    const key = str(f, raw, "public_key", path, { required: true });
    if (!key) return undefined;
    broker.publicKey = key;
  } else {
    const secret = secretSource(f, raw, path, { expectedRef: "broker/secret" });
    if (!secret) return undefined;
    broker.secret = secret;
  }
  return broker;
}
