import { appendFile } from "node:fs/promises";
import type Docker from "dockerode";
import type { Diagnostic } from "../../../shared/diagnostics.ts";
import type { Workspace } from "../../../shared/workspace-layout.ts";
import type { ProcessEngine } from "../engine.ts";
import { type ProcessOutcome, type ProcessSpec, superviseChild } from "../process.ts";
import { execInContainer } from "./exec.ts";
import type { SandboxRole } from "./options.ts";
import { containerEnvironment, inContainer, type PathMap, pathMap } from "./paths.ts";

/** A line for the top of the log of the process that asked for a container. */
export type SandboxLog = (line: string) => Promise<void>;

/** Where an engine gets its container: the run's sandbox (sandbox.ts), which holds both of the run's. */
export interface ContainerSource {
  start(role: SandboxRole, log: SandboxLog): Promise<Docker.Container | undefined>;
  remove(role: SandboxRole): Promise<void>;
  removed(role: SandboxRole): boolean;
  handOverAgentFiles(): void;
  failure(): Diagnostic | undefined;
  daemonUrl(workerUrl: string | undefined): string | undefined;
  modelGatewayUrl(workerUrl: string): string;
}

/**
 * One phase's container as its process engine: started by the phase's first process and removed
 * when the phase is over (the setup steps' before the agent's starts), when a process times out
 * or is cancelled, and when the run ends. Every process is an exec inside it, never a host
 * process, even once the container is gone (then the process fails to start).
 */
export class SandboxEngine implements ProcessEngine {
  readonly #source: ContainerSource;
  readonly #role: SandboxRole;
  readonly #map: PathMap;
  #starting: Promise<Docker.Container | undefined> | undefined;
  /** the log the container's start was written to */
  #startLog: string | undefined;

  constructor(source: ContainerSource, role: SandboxRole, paths: Workspace) {
    this.#source = source;
    this.#role = role;
    this.#map = pathMap(paths);
  }

  failure(): Diagnostic | undefined {
    return this.#source.failure();
  }

  daemonUrl(workerUrl: string | undefined): string | undefined {
    return this.#source.daemonUrl(workerUrl);
  }

  modelGatewayUrl(workerUrl: string): string {
    return this.#source.modelGatewayUrl(workerUrl);
  }

  run(spec: ProcessSpec): Promise<ProcessOutcome> {
    // the container's start is part of the process: what waits for the process's start goes ahead now
    spec.onStarted?.();
    let stop = false;
    const exited = (async () => {
      const container = await this.#start(spec.logFile, spec.truncate === true);
      if (!container || stop) {
        const why = this.failure()?.message ?? `the run's ${this.#role} container was removed`;
        return { exitCode: null, signal: null, stdout: "", spawnError: why };
      }
      if (this.#role === "agent") {
        // the runtime wrote the agent's files (its token file, a fresh HOME) just before this process
        try {
          this.#source.handOverAgentFiles();
        } catch (error) {
          return { exitCode: null, signal: null, stdout: "", spawnError: (error as Error).message };
        }
      }
      return execInContainer(container, {
        ...spec,
        // the container's start is logged at the top of the first process's log: kept, not truncated
        truncate: spec.truncate === true && spec.logFile !== this.#startLog,
        argv: spec.argv.map((arg) => inContainer(arg, this.#map)),
        cwd: inContainer(spec.cwd, this.#map),
        env: containerEnvironment(spec.env, this.#map),
      });
    })();
    return superviseChild(spec, exited, () => {
      stop = true;
      // the run's end awaits the same removal
      void this.close();
    }).outcome;
  }

  /** Removes this phase's container, with every process in it; never rejects. */
  close(): Promise<void> {
    return this.#source.remove(this.#role);
  }

  #start(logFile: string, truncate: boolean): Promise<Docker.Container | undefined> {
    if (this.#source.removed(this.#role)) return Promise.resolve(undefined);
    if (this.#starting) return this.#starting;
    this.#startLog = logFile;
    // one line after another, progress lines included, and all of them before the process's own
    // output; the first one starts a log the process would have started empty
    let written = Promise.resolve();
    let flag = truncate ? "w" : "a";
    const log = (line: string) => {
      const text = `# sandbox: ${line}\n`;
      const mode = flag;
      flag = "a";
      // a log line that cannot be written is lost; the run goes on
      written = written.then(() => appendFile(logFile, text, { flag: mode })).catch(() => {});
      return written;
    };
    this.#starting = this.#source.start(this.#role, log);
    return this.#starting;
  }
}
