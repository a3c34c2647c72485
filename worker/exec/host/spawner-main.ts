/**
 * The worker's spawner process (see spawner.ts). It starts every setup step and agent of its worker
 * and kills their process groups when the worker is gone. It runs argv vectors exactly as given
 * (no shell text is generated here), and is kept small on purpose: forking from a small process is
 * cheap, forking from the worker's large heap is not.
 */
import { killGroup, startChild } from "./child-process.ts";
import type { SpawnReply, SpawnRequest } from "./spawner.ts";

const groups = new Set<number>();

const send = (reply: SpawnReply) => {
  if (process.connected) process.send?.(reply);
};

function run(request: Extract<SpawnRequest, { type: "spawn" }>) {
  const { id, spec } = request;
  const { pid, exited } = startChild(spec);
  if (pid !== undefined) {
    groups.add(pid);
    send({ type: "started", id, pid });
  }
  void exited.then((exit) => {
    if (pid !== undefined) groups.delete(pid);
    send({ type: "exit", id, ...exit });
  });
}

process.on("message", (request: SpawnRequest) => {
  if (request.type === "spawn") run(request);
  else if (request.type === "kill") killGroup(request.pgid);
});
// the IPC channel closes when the worker process is gone, however it went (SIGKILL included)
process.on("disconnect", () => {
  for (const pgid of groups) killGroup(pgid);
  process.exit(0);
});
// a terminal's Ctrl-C reaches the whole foreground group: the spawner goes only with its worker
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => {});
send({ type: "ready" });
