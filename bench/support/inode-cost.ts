import { mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";

/**
 * CPU microseconds one new directory costs in `parent` right now: 200 `mkdir`s timed with the
 * process's own CPU clock. A no-op run creates ten inodes (six directories and four files). On ext4
 * without a journal each new inode skips every inode of its group deleted in the last minutes, so
 * this cost follows what the machine deleted before a benchmark (measured here: 48 to 639 µs on the
 * same disk); the benchmark prints it beside its figures. It can read low while the runs' own
 * directories are slowed (25-34 µs beside drains that were, on one host): a settled reading does not
 * prove a settled disk. The directories are left in `parent` for the benchmark's own clean-up at
 * its end: deleting them here would leave 200 recently deleted inodes for every run measured after
 * this to skip.
 */
export function inodeCostUs(parent: string, count = 200): number {
  const dir = mkdtempSync(join(parent, "svc-bench-inodes-"));
  const before = process.cpuUsage();
  for (let i = 0; i < count; i += 1) mkdirSync(join(dir, String(i)));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}
