import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Hosts made of Linux network namespaces (iproute2, needs root): a "switch" namespace holds a
 * private bridge, and every host namespace is joined to it by a veth pair whose host end is `eth0`.
 * The drill's own process joins the bridge too (one veth in its namespace, `SUBNET.1`), so it can
 * reach every host while all traffic stays on addresses inside the drill's namespaces.
 */
export const SUBNET = "10.237.27";
const PREFIX = "svcdrill";

export interface Host {
  name: string;
  /** the namespace's name, for `ip netns exec` */
  ns: string;
  address: string;
  /** command prefix that runs a program inside this host */
  wrap: string[];
  /** cuts the host's cable (its switch port goes down; the host's own sockets see nothing) */
  linkDown(): Promise<void>;
  linkUp(): Promise<void>;
  /** pids of every process inside the host's namespace */
  pids(): Promise<number[]>;
}

export interface Network {
  hosts: Record<string, Host>;
  /** the drill process's address on the bridge */
  ownAddress: string;
  destroy(): Promise<void>;
}

export function isRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

async function ip(...args: string[]): Promise<string> {
  return (await run("ip", args)).stdout;
}

/** Removes namespaces a killed earlier drill left behind (their pid, in the name, is gone). */
async function removeLeftovers(): Promise<void> {
  const names = (await ip("netns", "list")).split("\n").map((line) => line.split(" ")[0] ?? "");
  for (const name of names) {
    const pid = Number(new RegExp(`^${PREFIX}-(\\d+)-`).exec(name)?.[1]);
    if (!pid || pid === process.pid) continue;
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) await ip("netns", "del", name).catch(() => undefined);
  }
}

/** Creates the switch and one namespace per host; `hosts` maps a host name (≤ 10 chars) to its last octet. */
export async function createNetwork(hosts: Record<string, number>): Promise<Network> {
  await removeLeftovers();
  const tag = `${PREFIX}-${process.pid}`;
  const sw = `${tag}-switch`;
  const ownLink = `svd${process.pid}`.slice(0, 15);
  const created: string[] = [];
  const network: Network = {
    hosts: {},
    ownAddress: `${SUBNET}.1`,
    async destroy() {
      // deleting a namespace deletes the veth ends inside it, and with them their peers
      for (const ns of created.reverse()) await ip("netns", "del", ns).catch(() => undefined);
      await ip("link", "del", ownLink).catch(() => undefined);
    },
  };
  try {
    await ip("netns", "add", sw);
    created.push(sw);
    await ip("-n", sw, "link", "add", "br0", "type", "bridge");
    await ip("-n", sw, "link", "set", "br0", "up");
    await ip("link", "add", ownLink, "type", "veth", "peer", "name", "drill", "netns", sw);
    await ip("-n", sw, "link", "set", "drill", "master", "br0", "up");
    await ip("addr", "add", `${network.ownAddress}/24`, "dev", ownLink);
    await ip("link", "set", ownLink, "up");
    for (const [name, octet] of Object.entries(hosts)) {
      const ns = `${tag}-${name}`;
      const address = `${SUBNET}.${octet}`;
      await ip("netns", "add", ns);
      created.push(ns);
      await ip("-n", ns, "link", "set", "lo", "up");
      await ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", name, "netns", sw);
      await ip("-n", sw, "link", "set", name, "master", "br0", "up");
      await ip("-n", ns, "addr", "add", `${address}/24`, "dev", "eth0");
      await ip("-n", ns, "link", "set", "eth0", "up");
      network.hosts[name] = {
        name,
        ns,
        address,
        wrap: ["ip", "netns", "exec", ns],
        linkDown: async () => void (await ip("-n", sw, "link", "set", name, "down")),
        linkUp: async () => void (await ip("-n", sw, "link", "set", name, "up")),
        pids: async () => (await ip("netns", "pids", ns)).split("\n").filter(Boolean).map(Number),
      };
    }
  } catch (error) {
    await network.destroy();
    throw error;
  }
  return network;
}
