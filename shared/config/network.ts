import { isIP } from "node:net";

/**
 * True when binding to `host` keeps the ingress unreachable from other machines.
 * Only literal loopback addresses and `localhost` count: a hostname that merely resolves to
 * loopback today may not tomorrow, and `0.0.0.0` / `::` bind every interface.
 */
export function isLoopbackHost(host: string): boolean {
  const value = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1");
  if (value === "localhost" || value.endsWith(".localhost")) return true;
  if (isIP(value) === 4) return value.startsWith("127.");
  if (isIP(value) === 6) {
    if (value === "::1" || /^(0{1,4}:){7}0{0,3}1$/.test(value)) return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(value);
    return mapped ? mapped[1]!.startsWith("127.") : false;
  }
  return false;
}
