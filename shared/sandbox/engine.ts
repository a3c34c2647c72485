import Docker from "dockerode";
import type { EngineAddress } from "../config/sandbox-types.ts";

/** Errors that mean nothing answered at the engine's address (rather than the engine refusing a request). */
const UNREACHABLE = new Set([
  "ENOENT",
  "ECONNREFUSED",
  "EACCES",
  "EPERM",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
]);

/** A Docker Engine API client (dockerode); Podman's compatible socket answers the same calls. */
export function openEngine(engine: EngineAddress): Docker {
  return "socket" in engine
    ? new Docker({ socketPath: engine.socket })
    : new Docker({ host: engine.host, port: engine.port, protocol: "http" });
}

/** The engine's address as an operator writes it (DOCKER_HOST form). */
export function engineLabel(engine: EngineAddress): string {
  return "socket" in engine ? `unix://${engine.socket}` : `tcp://${engine.host}:${engine.port}`;
}

export function isEngineUnreachable(error: unknown): boolean {
  return UNREACHABLE.has((error as { code?: string }).code ?? "");
}

/** The message of `sandbox_engine_unreachable`, and of the CLI when it cannot reach the engine. */
export function engineUnreachableMessage(engine: EngineAddress, error: unknown): string {
  const why = (error as { code?: string }).code ?? (error as Error).message;
  return `the container engine at ${engineLabel(engine)} did not answer (${why}) - start the engine (dockerd or podman's API service), or point "sandboxes.engine.socket" in daemon.yaml (or DOCKER_HOST) at its socket`;
}

/** An HTTP status from the engine (404 for a missing image or container), when the error carries one. */
export function engineStatus(error: unknown): number | undefined {
  return (error as { statusCode?: number }).statusCode;
}

export async function imageExists(docker: Docker, name: string): Promise<boolean> {
  try {
    await docker.getImage(name).inspect();
    return true;
  } catch (error) {
    if (engineStatus(error) === 404) return false;
    throw error;
  }
}

/** One line per layer event of a pull, push or build: what `svc image pull` and the run's log show. */
export type ProgressLine = (line: string) => void;

interface ProgressEvent {
  id?: string;
  status?: string;
  progress?: string;
  stream?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/**
 * Reads an engine progress stream to its end. Layer events come out as `<layer>: <status> <bar>`,
 * and a layer's repeated download ticks are shown only when their status changes, so a log holds
 * one line per step of each layer rather than hundreds. An `error` event fails the promise.
 */
export function followProgress(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  show: ProgressLine,
): Promise<void> {
  const lastStatus = new Map<string, string>();
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error) => (error ? reject(error) : resolve()),
      (event: ProgressEvent) => {
        if (event.error) {
          reject(new Error(event.errorDetail?.message ?? event.error));
          return;
        }
        if (event.stream) {
          const text = event.stream.trimEnd();
          if (text) show(text);
          return;
        }
        if (!event.status) return;
        if (!event.id) return show(event.status);
        if (lastStatus.get(event.id) === event.status) return;
        lastStatus.set(event.id, event.status);
        show(`${event.id}: ${event.status}${event.progress ? ` ${event.progress}` : ""}`);
      },
    );
  });
}

/** `docker pull`, with credentials when the registry needs them. */
export async function pullImage(
  docker: Docker,
  reference: string,
  show: ProgressLine,
  auth?: { username: string; password: string; serveraddress: string },
): Promise<void> {
  const stream = await docker.pull(reference, auth ? { authconfig: auth } : {});
  await followProgress(docker, stream, show);
}

/** `docker tag <from> <repo>:<tag>`. */
export async function tagImage(docker: Docker, from: string, to: string): Promise<void> {
  const colon = to.lastIndexOf(":");
  await docker.getImage(from).tag({ repo: to.slice(0, colon), tag: to.slice(colon + 1) });
}
