import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import { isLoopbackHost } from "./config/network.ts";

/**
 * Headers a proxy adds to say whom it forwards for; their presence means "not from this machine".
 * A reverse proxy on the same host connects from 127.0.0.1 too; it is told apart by the
 * `X-Forwarded-For` it adds (deploy/nginx/svc-proxy.conf does). One that adds none (a TCP proxy,
 * `ssh -L`) cannot be told apart: `server.loopback_star: false` is for such installs.
 */
export const FORWARDING_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"] as const;

/**
 * Whether a request without a token acts as the local client (`*`, owner `local`). `refused` is
 * set when the request did come from this machine, straight to the ingress, but from a browser
 * on behalf of some web page; it says which header gave that away, never the header's value.
 */
export type LoopbackVerdict = { local: true } | { local: false; refused?: string };

/**
 * The loopback rule. A local program (the svc CLI, an MCP client, curl) connects from a loopback
 * address, adds no forwarding header, addresses the daemon by a loopback name and sends no Origin.
 * A browser can reach the same socket from any web page, so three more things must hold:
 *
 * - Host is `localhost`, a loopback address, or `[::1]`, with the port this socket listens on. A
 *   DNS-rebinding page talks to 127.0.0.1 under its own name, and the browser sends that name.
 * - Origin, when present, is the daemon's own (`http://<Host>`). Browsers send it on every
 *   cross-origin request that is not a plain GET, preflighted or not (`Origin: null` from a
 *   sandboxed page or a redirect included).
 * - Sec-Fetch-Site, when present, is `same-origin` or `none` (typed URL, bookmark). `same-site`
 *   is refused too: another port of localhost is a different program.
 *
 * Programs that are not browsers send none of Origin and Sec-Fetch-Site, so they keep `*`. A
 * container on the host's network is such a program too, which is why the configuration refuses
 * `network: host` for sandboxes while this rule is on (shared/config/sandboxes.ts checkHostNetwork).
 */
export function loopbackVerdict(req: IncomingMessage): LoopbackVerdict {
  const peer = req.socket.remoteAddress;
  if (peer === undefined || !isLoopbackHost(peer)) return { local: false };
  for (const header of FORWARDING_HEADERS) if (req.headers[header] !== undefined) return { local: false };
  const host = req.headers.host;
  if (host === undefined || !namesLoopback(host, req.socket.localPort)) {
    return {
      local: false,
      refused:
        "its Host header does not name the daemon as localhost, 127.0.0.1 or [::1] with the port it listens on",
    };
  }
  const origin = req.headers.origin;
  if (origin !== undefined && !isOwnOrigin(origin, host)) {
    return { local: false, refused: "its Origin header names another web site (a web page sent it)" };
  }
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin" && site !== "none") {
    return {
      local: false,
      refused: "its Sec-Fetch-Site header says a browser sent it for another web site",
    };
  }
  return { local: true };
}

const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i;

/**
 * `localhost`, a literal loopback IPv4 address or a bracketed literal loopback IPv6 address, plus
 * `port` (80 when the header names none). A literal address cannot be rebound, and `localhost` is
 * answered by the resolver itself; any other name could be the attacker's. `*.localhost` is left
 * out: not every resolver keeps it off DNS.
 */
function namesLoopback(host: string, port: number | undefined): boolean {
  const match = HOST_HEADER.exec(host);
  if (!match || port === undefined) return false;
  const name = match[1]!.toLowerCase();
  if ((match[2] === undefined ? 80 : Number(match[2])) !== port) return false;
  if (name === "localhost") return true;
  const bracketed = name.startsWith("[");
  const address = bracketed ? name.slice(1, -1) : name;
  const family = isIP(address);
  if (family === 0 || bracketed !== (family === 6)) return false;
  return isLoopbackHost(address);
}

/** The serialised origin `http(s)://<host>` of the very Host the request was sent to. */
function isOwnOrigin(origin: string, host: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    // `null` and anything else that is no URL is nobody's own origin
    return false;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  return url.origin === origin.toLowerCase() && url.host === host.toLowerCase();
}
