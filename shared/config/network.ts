import { BlockList, isIP } from "node:net";

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

type Family = "ipv4" | "ipv6";

/** `::ffff:10.0.0.1`, the form Node reports for IPv4 peers of a dual-stack socket, as `10.0.0.1`. */
function unmapped(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

/**
 * One `server.trusted_proxies` entry: an address (`10.0.0.5`, `::1`) or a CIDR range
 * (`10.0.0.0/8`, `fd00::/8`); undefined when it is neither.
 */
export function parseAddressRange(
  text: string,
): { network: string; prefix: number; family: Family } | undefined {
  const [rawNetwork, rawPrefix, ...rest] = text.trim().split("/");
  if (rest.length || !rawNetwork) return undefined;
  const network = unmapped(rawNetwork.replace(/^\[(.*)\]$/, "$1"));
  const version = isIP(network);
  if (version === 0) return undefined;
  const max = version === 4 ? 32 : 128;
  if (rawPrefix !== undefined && !/^\d{1,3}$/.test(rawPrefix)) return undefined;
  const prefix = rawPrefix === undefined ? max : Number(rawPrefix);
  if (prefix > max) return undefined;
  return { network, prefix, family: version === 4 ? "ipv4" : "ipv6" };
}

/** A test of "is this peer address one of `ranges`", for entries `parseAddressRange` accepts. */
export function addressMatcher(ranges: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const range of ranges) {
    const parsed = parseAddressRange(range);
    if (parsed) list.addSubnet(parsed.network, parsed.prefix, parsed.family);
  }
  return (address) => {
    const plain = unmapped(address);
    const version = isIP(plain);
    return version !== 0 && list.check(plain, version === 4 ? "ipv4" : "ipv6");
  };
}
