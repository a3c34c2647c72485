import { readFileSync } from "node:fs";

/**
 * CPU a process has used, in milliseconds, from /proc/<pid>/stat (Linux): user + system, and with
 * `children` also the CPU of the children it has reaped. Throws when the process is gone.
 */
export function cpuMs(pid: number | "self", options: { children?: boolean } = {}): number {
  // the fields after the command name (which may hold spaces), from the state onwards
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const own = Number(fields[11]) + Number(fields[12]);
  const reaped = options.children ? Number(fields[13]) + Number(fields[14]) : 0;
  // clock ticks of 1/100 s
  return (own + reaped) * 10;
}
