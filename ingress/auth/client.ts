import type { IncomingMessage } from "node:http";
import { addressMatcher, isLoopbackHost } from "../../shared/config/network.ts";

/** Headers a proxy adds to say whom it forwards for; their presence means "not from this machine". */
export const FORWARDING_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"] as const;

/**
 * A loopback client is a process on this machine talking to the ingress directly: its socket peer
 * is a loopback address and it carries none of the forwarding headers. A reverse proxy on the same
 * host also connects from 127.0.0.1, but it adds `X-Forwarded-For` (deploy/nginx/svc-proxy.conf does),
 * so what it forwards is not loopback. A proxy that strips the header is misconfigured: every remote
 * client would then look local (docs/operations.md, what any proxy in front of svc must do).
 */
export function isLoopbackRequest(req: IncomingMessage): boolean {
  const peer = req.socket.remoteAddress;
  if (peer === undefined || !isLoopbackHost(peer)) return false;
  for (const header of FORWARDING_HEADERS) if (req.headers[header] !== undefined) return false;
  return true;
}

/**
 * Express's `trust proxy` setting for `server.trusted_proxies`: only a peer in that list has its
 * `X-Forwarded-For` and `X-Forwarded-Proto` believed, so `req.ip` is the client's address behind
 * those proxies and the socket peer otherwise. An empty list trusts nobody.
 */
export function trustProxy(trustedProxies: readonly string[] = []): (address: string) => boolean {
  if (trustedProxies.length === 0) return () => false;
  return addressMatcher(trustedProxies);
}
