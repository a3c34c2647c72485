import { addressMatcher } from "../../shared/config/network.ts";

/**
 * Express's `trust proxy` setting for `server.trusted_proxies`: only a peer in that list has its
 * `X-Forwarded-For` and `X-Forwarded-Proto` believed, so `req.ip` is the client's address behind
 * those proxies and the socket peer otherwise. An empty list trusts nobody.
 */
export function trustProxy(trustedProxies: readonly string[] = []): (address: string) => boolean {
  if (trustedProxies.length === 0) return () => false;
  return addressMatcher(trustedProxies);
}
