import { promises as dns, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";

/** How long an address found for a model host is used before the resolver is asked again. */
export const DNS_ANSWER_TTL_MS = 30_000;
/** How long "no such host" (or a resolver that gave up) is remembered for a model host. */
export const DNS_NEGATIVE_TTL_MS = 5_000;
/** Model hosts come from daemon.yaml: a handful. The bound only keeps a mistake from growing. */
const MAX_HOSTS = 256;

/** Answers that say the name cannot be resolved now: cached as briefly as DNS_NEGATIVE_TTL_MS. */
const NEGATIVE = new Set(["ENOTFOUND", "ENODATA", "EAI_AGAIN", "EAI_FAIL", "ESERVFAIL", "ETIMEOUT"]);

type Resolve = (hostname: string) => Promise<LookupAddress[]>;

interface Entry {
  expires: number;
  addresses?: LookupAddress[];
  code?: string;
}

/** The system's answer, as every other connection of the process gets it (hosts file, nsswitch). */
const systemResolve: Resolve = (hostname) => dns.lookup(hostname, { all: true });

function resolveError(hostname: string, code: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException & { hostname?: string } = new Error(`getaddrinfo ${code} ${hostname}`);
  error.code = code;
  error.syscall = "getaddrinfo";
  error.hostname = hostname;
  return error;
}

/**
 * got's `dnsCache` for model calls: one look-up per host name at a time (the callers that arrive
 * while it is pending share it), its addresses kept for DNS_ANSWER_TTL_MS and a negative answer for
 * DNS_NEGATIVE_TTL_MS, so a slow resolver is asked once, not once per run or per question.
 *
 * It asks the system resolver (`dns.lookup`, getaddrinfo), not DNS servers directly as got's own
 * cache does (`dnsCache: true`, through c-ares): a model host named in /etc/hosts, or `localhost`,
 * must keep resolving while the DNS servers are down, and got's cache asks them first. getaddrinfo
 * holds one of libuv's four threads while it waits; sharing the pending look-up keeps a resolver
 * that never answers to one thread, where a look-up per caller took all four.
 */
export class ModelDnsCache {
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<LookupAddress[]>>();
  readonly #resolve: Resolve;
  readonly #now: () => number;

  constructor(resolve: Resolve = systemResolve, now: () => number = Date.now) {
    this.#resolve = resolve;
    this.#now = now;
  }

  readonly lookup: LookupFunction = (hostname, options, callback) => {
    const wanted =
      options.family === 4 || options.family === "IPv4"
        ? 4
        : options.family === 6 || options.family === "IPv6"
          ? 6
          : 0;
    this.addresses(hostname).then(
      (found) => {
        const addresses = wanted ? found.filter((a) => a.family === wanted) : found;
        const first = addresses[0];
        if (!first) callback(resolveError(hostname, "ENOTFOUND"), "", 0);
        else if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, "", 0),
    );
  };

  /** Every address of `hostname`, from the cache while it is fresh. */
  async addresses(hostname: string): Promise<LookupAddress[]> {
    const family = isIP(hostname);
    if (family) return [{ address: hostname, family }];
    const entry = this.#entries.get(hostname);
    if (entry && entry.expires > this.#now()) {
      if (entry.addresses) return entry.addresses;
      throw resolveError(hostname, entry.code ?? "ENOTFOUND");
    }
    let pending = this.#pending.get(hostname);
    if (!pending) {
      pending = this.#ask(hostname);
      this.#pending.set(hostname, pending);
      // the map entry goes when the look-up settles; its rejection is the callers' to handle
      pending.then(
        () => this.#pending.delete(hostname),
        () => this.#pending.delete(hostname),
      );
    }
    return pending;
  }

  async #ask(hostname: string): Promise<LookupAddress[]> {
    try {
      const addresses = await this.#resolve(hostname);
      this.#remember(hostname, { expires: this.#now() + DNS_ANSWER_TTL_MS, addresses });
      return addresses;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code && NEGATIVE.has(code))
        this.#remember(hostname, { expires: this.#now() + DNS_NEGATIVE_TTL_MS, code });
      throw error;
    }
  }

  #remember(hostname: string, entry: Entry): void {
    this.#entries.delete(hostname);
    if (this.#entries.size >= MAX_HOSTS) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(hostname, entry);
  }
}
