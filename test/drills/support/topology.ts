import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { type FakeGitHub, startFakeGitHub } from "../../e2e/outputs/fake-github.ts";
import {
  type NginxHost,
  type PostgresHost,
  postgresBinaries,
  startNginxHost,
  startPostgresHost,
} from "./hosts.ts";
import { COMMENT_REPO, HOST_SECRETS, hostCopy, writeHostConfig } from "./multi-host-config.ts";
import { createNetwork, isRoot, type Network, SUBNET } from "./netns.ts";
import { childEnv, ROOT, type SvcProcess, spawnSvc, startWorker } from "./processes.ts";

const run = promisify(execFile);

/** Last octets of the drill's hosts on its private bridge. */
const HOSTS = { pg: 2, nginx: 10, ingress1: 11, ingress2: 12, worker1: 21, worker2: 22, worker3: 23 };
export const INGRESS_HOSTS = ["ingress1", "ingress2"] as const;
export const WORKER_HOSTS = ["worker1", "worker2", "worker3"] as const;
export type IngressHost = (typeof INGRESS_HOSTS)[number];
export type WorkerHost = (typeof WORKER_HOSTS)[number];

/** Why the drill cannot run on this machine, or undefined when it can. */
export async function missingPrerequisite(): Promise<string | undefined> {
  if (!isRoot()) return "needs root: it creates network namespaces, veth pairs and a bridge (iproute2)";
  if (!postgresBinaries()) return "needs a PostgreSQL server under /usr/lib/postgresql/*/bin";
  const nginx = await run("nginx", ["-v"]).catch(() => undefined);
  if (!nginx) return "needs nginx (apt-get install -y nginx)";
  const ip = await run("ip", ["netns", "list"]).catch(() => undefined);
  if (!ip) return "needs iproute2's `ip netns`";
  return undefined;
}

/**
 * Everything the multi-host drill runs: the network, a Postgres host, an nginx host in front of two
 * ingress hosts, three worker hosts (each its own configuration directory, and so its own workspaces
 * and knowledge index) and the fake code host on the drill's own bridge address.
 */
export class Topology {
  network!: Network;
  postgres!: PostgresHost;
  nginx!: NginxHost;
  github!: FakeGitHub;
  /** the drill's own connection to the Postgres host, for accounting */
  pool!: pg.Pool;
  readonly ingresses = new Map<IngressHost, SvcProcess>();
  readonly workers = new Map<WorkerHost, SvcProcess>();
  /** every svc process ever started, killed ones included, for cleanup */
  readonly processes: SvcProcess[] = [];
  #root = "";
  #configs = new Map<string, string>();

  async start(options: { concurrency: number; commentSeconds: number; heartbeat: string }): Promise<void> {
    this.#root = await mkdtemp(join(tmpdir(), "svc-drill-hosts-"));
    // Postgres runs as the postgres user and nginx's workers as nobody: both must enter this directory
    await chmod(this.#root, 0o755);
    this.network = await createNetwork(HOSTS);
    const { hosts } = this.network;
    await mkdir(join(this.#root, "postgres"));
    this.postgres = await startPostgresHost(hosts.pg!, join(this.#root, "postgres"), SUBNET);
    this.pool = new pg.Pool({ connectionString: this.postgres.url, max: 3 });
    // a Postgres restart breaks the drill's idle connections too; the next query reconnects
    this.pool.on("error", () => {});
    this.github = await startFakeGitHub({
      users: { [HOST_SECRETS.DRILL_CODEHOST_TOKEN]: "svc-drill" },
      host: this.network.ownAddress,
    });
    const template = await writeHostConfig({
      codehostUrl: this.github.url,
      nginxAddress: hosts.nginx!.address,
      concurrency: options.concurrency,
      commentSeconds: options.commentSeconds,
      heartbeat: options.heartbeat,
    });
    for (const name of [...INGRESS_HOSTS, ...WORKER_HOSTS]) {
      const dir = await hostCopy(template, name);
      await mkdir(join(dir, "home"));
      this.#configs.set(name, dir);
    }
    await rm(template, { recursive: true, force: true });
    this.nginx = await startNginxHost(
      hosts.nginx!,
      INGRESS_HOSTS.map((name) => `${hosts[name]!.address}:7420`),
      join(this.#root, "nginx"),
    );
  }

  /** The environment of a host's svc processes: its own configuration directory and HOME. */
  env(host: string): Record<string, string> {
    const dir = this.#configs.get(host)!;
    // no SVC_WORKER_HEARTBEAT_MS override: the hosts run on `worker.heartbeat` from daemon.yaml
    return childEnv({
      SVC_CONFIG_DIR: dir,
      SVC_DATABASE_URL: this.postgres.url,
      ...HOST_SECRETS,
      HOME: join(dir, "home"),
    });
  }

  async startIngress(name: IngressHost): Promise<SvcProcess> {
    const proc = spawnSvc("ingress", name, this.env(name), this.network.hosts[name]!.wrap);
    this.processes.push(proc);
    await proc.waitForLine((l) => l.event === "ingress.listening", "ingress.listening");
    this.ingresses.set(name, proc);
    return proc;
  }

  async startWorker(name: WorkerHost): Promise<SvcProcess> {
    const proc = await startWorker(name, this.env(name), this.network.hosts[name]!.wrap);
    this.processes.push(proc);
    this.workers.set(name, proc);
    return proc;
  }

  /** SIGKILLs every process on a host (the svc process and the agents it started). */
  async killHost(name: string): Promise<number> {
    const pids = await this.network.hosts[name]!.pids();
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // it exited between the listing and the kill: nothing left to kill
      }
    }
    return pids.length;
  }

  /** Runs a command inside a host's namespace: `{ code, stdout, stderr }`, never rejects. */
  async exec(host: string, argv: string[], env: Record<string, string>) {
    const [command, ...args] = [...this.network.hosts[host]!.wrap, ...argv];
    return await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(command!, args, { env, cwd: ROOT, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
  }

  commentsOn(issue: number): number {
    return this.github.comments.get(`${COMMENT_REPO}#${issue}`)?.length ?? 0;
  }

  /** Releases everything, whatever state the drill left it in; each step runs even if one before failed. */
  async stop(): Promise<void> {
    const steps: (() => Promise<unknown> | undefined)[] = [
      () => Promise.all(this.processes.map((p) => p.stop("SIGKILL", 5_000))),
      () => this.nginx?.stop(),
      () => this.pool?.end(),
      () => this.postgres?.stop(),
      () => this.github?.close(),
      () => this.network?.destroy(),
      () => (this.#root ? rm(this.#root, { recursive: true, force: true }) : undefined),
      () => Promise.all([...this.#configs.values()].map((dir) => rm(dir, { recursive: true, force: true }))),
    ];
    for (const step of steps) await Promise.resolve(step()).catch(() => undefined);
  }
}
