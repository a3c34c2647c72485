import { isLoopbackHost, parseAddressRange } from "../network.ts";
import { bool, checkKeys, int, quote, str, strList, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { DaemonSettings } from "../types.ts";
import { child } from "./read-helpers.ts";

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 7420;

export function readServer(f: ConfigFile, root: YamlMap, env: NodeJS.ProcessEnv): DaemonSettings["server"] {
  const server = child(f, root, "server", []) ?? {};
  checkKeys(f, server, ["server"], ["host", "port", "trusted_proxies", "loopback_star", "public_url"]);
  let host = str(f, server, "host", ["server"]) ?? DEFAULT_HOST;
  let port = int(f, server, "port", ["server"], { min: 1, max: 65_535 }) ?? DEFAULT_PORT;
  // the environment wins, so the off-loopback checks below see the address the ingress really binds
  const envHost = env.SVC_HOST?.trim();
  if (envHost) host = envHost;
  const envPort = env.SVC_PORT?.trim();
  if (envPort) {
    const parsed = Number(envPort);
    // 0 asks the kernel for a free port (tests, several ingresses on one host); the ingress logs the port it bound
    if (Number.isInteger(parsed) && parsed >= 0 && parsed <= 65_535) port = parsed;
    else
      f.report(
        ["server", "port"],
        "invalid_value",
        `the environment variable SVC_PORT (overriding "server.port") must be a port number between 0 and 65535, 0 for any free port (got ${quote(envPort)})`,
      );
  }
  // on by default: the svc CLI and MCP clients on the daemon's host need no token
  const loopbackStar = bool(f, server, "loopback_star", ["server"]) ?? true;
  const publicUrl = readPublicUrl(f, server);
  return {
    ...{ host, port, trustedProxies: readTrustedProxies(f, server), loopbackStar },
    ...(publicUrl ? { publicUrl } : {}),
  };
}

/** `server.public_url`: where people reach the daemon's pages; links in posted comments start with it. */
function readPublicUrl(f: ConfigFile, server: YamlMap): string | undefined {
  const value = str(f, server, "public_url", ["server"]);
  if (value === undefined) return undefined;
  try {
    const url = new URL(value);
    if ((url.protocol === "https:" || url.protocol === "http:") && !url.search && !url.hash)
      return value.replace(/\/+$/, "");
  } catch {
    // reported below, like a URL of another scheme
  }
  f.report(
    ["server", "public_url"],
    "invalid_value",
    `"server.public_url" must be an http(s) URL without query or fragment, e.g. https://svc.example.com (got ${quote(value)})`,
  );
  return undefined;
}

function readTrustedProxies(f: ConfigFile, server: YamlMap): string[] {
  const list = strList(f, server, "trusted_proxies", ["server"]) ?? [];
  const bad = list.findIndex((entry) => !parseAddressRange(entry));
  if (bad === -1) return list;
  f.report(
    ["server", "trusted_proxies", bad],
    "invalid_value",
    `"server.trusted_proxies[${bad}]" (${quote(list[bad]!)}) must be an IP address or a CIDR range such as 10.0.0.5, 10.0.0.0/8 or fd00::/8 - host names are not resolved`,
  );
  return [];
}

/** True when the effective bind address is reachable from other machines. */
export function offLoopback(settings: Pick<DaemonSettings, "server">): boolean {
  return !isLoopbackHost(settings.server.host);
}
