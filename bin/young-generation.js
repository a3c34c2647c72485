// The worker's young generation (V8's new space) has a fixed ceiling. Left to V8, a worker under a
// steady load grows it in steps to about 100 MB (V8 sizes it from the heap limit, 4 GB on a large
// host), the last steps 5 to 11 minutes into the load: the 30-minute soak read that as 1.1 and
// 2.2 MiB/min of resident growth after warm-up while live objects stayed flat. With 16 MB
// semi-spaces the new space stays within 32 MB (issue 46; docs/operations.md, "How svc runs").
// V8 sizes its heap once, at start-up: the flag must be on the command line, so `svc worker` starts
// itself again with it, in the same process (execve: same pid, signals, descriptors and environment).

export const WORKER_SEMI_SPACE_MIB = 16;

/** flags by which the operator chose the young generation's size (or the whole heap's) for themselves */
const CHOSEN = ["--max-semi-space-size", "--max_semi_space_size", "--max-heap-size", "--max_heap_size"];

/**
 * The argument vector to start `svc worker` again with, or undefined when this process already runs
 * with a chosen young generation (our own re-execution included) or is not the worker.
 * `argv` is process.argv: node, this script, then the command.
 */
export function workerRestartArgv({ argv, execArgv, execPath, nodeOptions }) {
  if (argv[2] !== "worker") return undefined;
  const given = [...execArgv, ...(nodeOptions ?? "").split(/\s+/)];
  if (given.some((arg) => CHOSEN.some((flag) => arg === flag || arg.startsWith(`${flag}=`))))
    return undefined;
  return [execPath, ...execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MIB}`, ...argv.slice(1)];
}
