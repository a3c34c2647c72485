import { addressMatcher } from "../../shared/config/network.ts";

/**
 * Headers a proxy adds to say whom it forwards for; their presence means "not from this machine".
 * A reverse proxy on the same host connects from 127.0.0.1 too; it is told apart by the
 * `X-Forwarded-For` it adds (deploy/nginx/svc-proxy.conf does). One that adds none (a TCP proxy,
 * `ssh -L`) cannot be told apart: `server.loopback_star: false` is for such installs.
 */
export const FORWARDING_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"] as const;

/**
 * Express's `trust proxy` setting for `server.trusted_proxies`: only a peer in that list has its
 * `X-Forwarded-For` and `X-Forwarded-Proto` believed, so `req.ip` is the client's address behind
 * those proxies and the socket peer otherwise. An empty list trusts nobody.
 */
export function trustProxy(trustedProxies: readonly string[] = []): (address: string) => boolean {
  if (trustedProxies.length === 0) return () => false;
  return addressMatcher(trustedProxies);
}
