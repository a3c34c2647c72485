import { readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Queryable } from "../../db/queryable.ts";
import type { Budget } from "../../shared/config/types.ts";
import type { Logger } from "../../shared/logger.ts";
import { GatewayAccount, type Lease, type LeaseRegistry } from "./account.ts";
import { apiOfPath, clientBaseUrl, errorAnswer, routeOf, tokenOf } from "./apis.ts";
import { forwardToDaemon } from "./daemon.ts";
import { forward } from "./forward.ts";
import { Ledger } from "./ledger.ts";
import { openAnswerBook, replayAnswer } from "./recording.ts";
import { answerJson } from "./upstream.ts";
import type { CredentialStates } from "./verdict.ts";

/** How long an invocation's running total outlives its last attempt here (a task's next attempt reuses it). */
const LEDGER_LINGER_MS = 120_000;

export interface GatewayDeps {
  /** where the invocation's recorded usage is read */
  db: Queryable;
  credentials: CredentialStates;
  logger: Logger;
  /** where a sandboxed agent's requests to svc itself go on to (daemon.ts) */
  daemonUrl?: string;
}

/**
 * The worker's model gateway: one loopback listener that every agent's model calls pass through
 * (docs/worker.md, "The model gateway"). An attempt's process holds a gateway token, never the
 * credential: the gateway maps the token to the attempt's target and credential, adds the
 * credential on the way out and forwards to that target's `base_url` only. It reads the usage of
 * every answer as it passes, keeps the invocation's running total against its `budget`, and
 * decides the credential's state from the answer's status.
 */
export class ModelGateway implements LeaseRegistry {
  readonly #deps: GatewayDeps;
  readonly #leases = new Map<string, Lease>();
  readonly #ledgers = new Map<string, Ledger>();
  readonly #linger = new Map<Ledger, NodeJS.Timeout>();
  #server: Server | undefined;
  #socketServer: Server | undefined;
  #socketDir: string | undefined;
  #url = "";

  constructor(deps: GatewayDeps) {
    this.#deps = deps;
  }

  /**
   * Listens on loopback, on `port` (0: any free one), and on a unix socket in a directory of its
   * own under `socketParent`: the socket is what a sandbox's container mounts, its one way out
   * (socketPath). The worker puts it beside the run folders, which the container engine sees as
   * the worker does (a private /tmp, systemd's PrivateTmp, is not the engine's); a parent whose
   * path leaves no room for a socket name (107 bytes) falls back to the temporary directory.
   */
  async start(port = 0, host = "127.0.0.1", socketParent = tmpdir()): Promise<string> {
    const server = this.#serve(false);
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    this.#url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
    const prefix = socketDirPrefix();
    const parent =
      join(socketParent, `${prefix}XXXXXX`, "gateway.sock").length <= 107 ? socketParent : tmpdir();
    await mkdir(parent, { recursive: true });
    // what a worker killed outright (SIGKILL, the OOM killer) left behind: nobody else removes it
    await sweepStaleSocketDirs(parent);
    this.#socketDir = await mkdtemp(join(parent, prefix));
    const socket = this.socketPath as string;
    const socketServer = this.#serve(true);
    this.#socketServer = socketServer;
    await new Promise<void>((resolve, reject) => {
      socketServer.once("error", reject);
      socketServer.listen(socket, () => resolve());
    });
    // the container's user is not the worker's; the directory is the worker's alone (0700), and
    // a container sees the socket only through its own bind mount. Tokens guard what is behind it,
    // as on the loopback port.
    await chmod(socket, 0o666);
    return this.#url;
  }

  /** The unix socket a sandbox's container mounts (worker/exec/sandbox/forwarder.ts). */
  get socketPath(): string | undefined {
    return this.#socketDir ? join(this.#socketDir, "gateway.sock") : undefined;
  }

  #serve(sandboxed: boolean): Server {
    return createServer({ noDelay: true, keepAlive: true }, (request, response) =>
      this.#handle(request, response, sandboxed),
    );
  }

  /** The listener's address, as the worker's own processes reach it. */
  get url(): string {
    return this.#url;
  }

  /** The base URL a client of `lease`'s API is given, with the gateway at `url`. */
  clientUrl(lease: Lease, url = this.#url): string {
    return clientBaseUrl(lease.api, url);
  }

  /**
   * An attempt's account: the invocation's running total (read from the database now when the
   * pipeline has a budget), to which the attempt's leases add what they spend.
   */
  async account(spec: {
    invocationId: string;
    taskId: string;
    budget: Budget | undefined;
    onToken: (token: string) => void;
    /**
     * the attempt's model answers: replayed when its run is a backtest's candidate with
     * `replay_answers`, recorded when `record` (the pipeline's `record_answers`) and its run is live
     * (recording.ts); absent: neither, and nothing is read for it
     */
    answers?: { record: boolean };
  }): Promise<GatewayAccount> {
    let ledger = this.#ledgers.get(spec.invocationId);
    if (!ledger || ledger.budget !== spec.budget) {
      ledger = new Ledger(this.#deps.db, spec.invocationId, spec.budget);
      this.#ledgers.set(spec.invocationId, ledger);
    }
    ledger.holders += 1;
    clearTimeout(this.#linger.get(ledger));
    this.#linger.delete(ledger);
    const account = new GatewayAccount(this, ledger, spec.taskId, spec.onToken);
    try {
      await ledger.refresh();
      if (spec.answers)
        account.answers = await openAnswerBook(this.#deps.db, {
          invocationId: spec.invocationId,
          taskId: spec.taskId,
          record: spec.answers.record,
        });
    } catch (error) {
      await account.close();
      throw error;
    }
    return account;
  }

  add(lease: Lease): void {
    this.#leases.set(lease.token, lease);
  }

  remove(token: string): void {
    this.#leases.delete(token);
  }

  release(ledger: Ledger): void {
    ledger.holders -= 1;
    if (ledger.holders > 0) return;
    const timer = setTimeout(() => {
      this.#linger.delete(ledger);
      if (ledger.holders === 0 && this.#ledgers.get(ledger.invocationId) === ledger)
        this.#ledgers.delete(ledger.invocationId);
    }, LEDGER_LINGER_MS);
    timer.unref();
    this.#linger.set(ledger, timer);
  }

  /** Live gateway tokens: attempts running now. */
  get leases(): number {
    return this.#leases.size;
  }

  async close(): Promise<void> {
    for (const timer of this.#linger.values()) clearTimeout(timer);
    this.#linger.clear();
    for (const server of [this.#server, this.#socketServer]) {
      if (!server) continue;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    if (this.#socketDir) await rm(this.#socketDir, { recursive: true, force: true });
  }

  /**
   * A model API call (`/v1/...`) with a gateway token goes to its target; on the sandboxes'
   * socket, anything else goes on to the daemon with the caller's own token (daemon.ts).
   */
  #handle(request: IncomingMessage, response: ServerResponse, sandboxed: boolean): void {
    const raw = request.url ?? "/";
    // origin-form only: a request that names a URL of its own (absolute-form) is not forwarded there
    const queryAt = raw.indexOf("?");
    const path = queryAt === -1 ? raw : raw.slice(0, queryAt);
    const query = queryAt === -1 ? "" : raw.slice(queryAt);
    if (sandboxed && path.startsWith("/") && !path.startsWith("/v1/")) {
      forwardToDaemon(this.#deps.daemonUrl, path, query, request, response, this.#deps.logger);
      return;
    }
    const token = tokenOf(request.headers);
    const lease = token === undefined ? undefined : this.#leases.get(token);
    if (!lease) {
      answerJson(
        response,
        request,
        errorAnswer(
          apiOfPath(path),
          "unauthorized",
          "invalid gateway token: it belongs to no running agent attempt",
        ),
      );
      return;
    }
    // an agent that retries a refused key must not hammer the API with it (nor be forwarded on it)
    if (lease.refusal?.kind === "dead") {
      answerJson(
        response,
        request,
        errorAnswer(
          lease.api,
          "unauthorized",
          `the model API of target ${lease.target.name} refused credential ${lease.credential} (${lease.refusal.reason}); svc's gateway forwards nothing more with this gateway token: the attempt goes on with the target's next credential, or fix or replace the key`,
        ),
      );
      return;
    }
    const route = path.startsWith("/") ? routeOf(lease.api, request.method ?? "GET", path) : undefined;
    if (!route) {
      this.#deps.logger.warn(
        `gateway: ${request.method} ${path.slice(0, 200)} is not a route of the ${lease.api} API it forwards`,
        {
          event: "gateway.unknown_route",
          target: lease.target.name,
          method: request.method,
          path: path.slice(0, 200),
        },
      );
      answerJson(
        response,
        request,
        errorAnswer(
          lease.api,
          "not_found",
          `${request.method} ${path.slice(0, 200)} is not forwarded by svc's gateway`,
        ),
      );
      return;
    }
    const { account } = lease;
    // a replaying run's model calls are answered from the recording: never upstream, never charged
    if (route.model && account.answers?.mode === "replay") {
      replayAnswer(lease, path, request, response, this.#deps.logger);
      return;
    }
    if (route.model) {
      const overrun = account.ledger.overrun();
      if (overrun) {
        account.refuse(overrun);
        const why = account.exceeded()?.message ?? "the invocation's budget is spent";
        this.#deps.logger.warn(`gateway: ${why}`, {
          event: "gateway.budget_exceeded",
          invocation: account.ledger.invocationId,
          target: lease.target.name,
          budget: overrun.budget,
        });
        answerJson(response, request, errorAnswer(lease.api, "budget", why));
        return;
      }
    }
    forward({ lease, path, query, model: route.model }, request, response, {
      credentials: this.#deps.credentials,
      logger: this.#deps.logger,
    });
  }
}

/**
 * A gateway's socket folder is `.gateway-<pid>-<start>-XXXXXX`: the process that made it, named
 * by its pid and its start time (/proc/<pid>/stat, in clock ticks since boot), so a pid used again
 * by another process, as a restarted container's worker gets the same pid, is not taken for it.
 */
const SOCKET_DIR = ".gateway-";

function socketDirPrefix(): string {
  return `${SOCKET_DIR}${process.pid}-${startTime(process.pid) ?? "0"}-`;
}

/** When `pid` started, as /proc says; undefined when no such process (or no /proc). */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // the command name (field 2) may hold spaces and parentheses: field 22 is counted after its end
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined; // the process is gone, or this system has no /proc
  }
}

/**
 * Removes the socket folders under `parent` that no live gateway uses: the folders of workers
 * killed before their close() ran. The workspaces folder may be shared by several workers of the
 * host, so a folder stays while anything listens on its socket, and while the process that made it
 * lives (a worker between making its folder and listening). Pid reuse only keeps a stale folder
 * longer, never removes a live one; a folder of an older release (no pid in its name) goes once
 * nothing listens on it. Folders are judged by their own entry: a link is never followed.
 */
export async function sweepStaleSocketDirs(parent: string): Promise<string[]> {
  const removed: string[] = [];
  const entries = await readdir(parent, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isDirectory() || !entry.name.startsWith(SOCKET_DIR)) continue;
    const dir = join(parent, entry.name);
    if ((await listening(join(dir, "gateway.sock"))) || creatorAlive(entry.name)) continue;
    try {
      await rm(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // another user's folder, or removed by another worker meanwhile: not this start's to fail on
    }
  }
  return removed;
}

/** Whether something accepts connections on `socket`: a unix socket answers at once, or refuses. */
function listening(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const connection = connect(socket);
    connection.once("connect", () => {
      connection.destroy();
      resolve(true);
    });
    // refused (its process is gone) or absent: nothing listens; anything else (EACCES, EAGAIN of a
    // full backlog) is a live socket or one that is not ours to judge
    connection.once("error", (error: NodeJS.ErrnoException) =>
      resolve(error.code !== "ECONNREFUSED" && error.code !== "ENOENT"),
    );
  });
}

/** Whether the process named in a socket folder's name still runs (the same process, by its start time). */
function creatorAlive(name: string): boolean {
  const match = /^\.gateway-(\d+)-(\d+)-/.exec(name);
  if (!match) return false;
  const pid = Number(match[1]);
  if (match[2] !== "0") return startTime(pid) === match[2];
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // alive, another user's
  }
}
