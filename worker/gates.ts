/**
 * The shells that hold a prepared child at its gate (see Spawner.prepare and spawner-main.ts), and
 * the lines that tell a spare which child to become.
 */

/** What opens a gate started for its child: one line on its fd 3. */
export const RELEASE = "go\n";

/**
 * The gate of a held child started for it. It starts in "/" because its workspace may not exist
 * yet, waits for a line on fd 3, then enters the child's directory and execs the child's argv with
 * fd 3 closed: `$0` is /bin/sh as for a direct `sh -c`, and the OLDPWD that `cd` sets is dropped,
 * so the child sees exactly the environment and directory it would have been spawned with
 * (GATE_VARIABLES).
 */
export const GATE =
  'IFS= read -r svc_gate <&3 && cd -P -- "$1" && unset OLDPWD svc_gate && shift && exec "$@" 3<&-';

/**
 * The gate of a spare: a shell started with an empty environment before any child needs it, so a
 * prepared child costs no fork and no exec while its worker's transaction runs (on two cores the
 * fork and exec of a fresh gate doubled the time of the database statement beside it). Its fd 3
 * is a FIFO, open for reading and writing, whose other end the spawner holds; the shell sources
 * it. The first line (SPARE_OPENING) closes the shell's own fd 3, so from then on the spawner
 * holds the only write end and the spare reads EOF the moment the spawner is gone. Then the
 * spawner writes the child's environment, directory and argv as shell lines (sparePrelude), and
 * at the release SPARE_RELEASE, which enters the directory and execs the argv exactly as GATE
 * does. A FIFO closed before the release has run nothing but assignments. (A FIFO, not a socket as
 * for GATE: Node's stdio pipes are sockets, which `.` cannot open, and `read` takes a byte per
 * system call.)
 */
export const SPARE_GATE = ". /dev/fd/3; exit 0";

/** The first line a spare reads, written before it starts. */
export const SPARE_OPENING = "exec 3<&-\n";

/** The spare's last lines: its child runs. */
export const SPARE_RELEASE = 'cd -P -- "$svc_cwd" || exit\nunset OLDPWD svc_cwd\nexec "$@"\n';

/**
 * The shell's own variables: a child that names one in its environment gets a gate of its own,
 * where the environment is set by exec, not by `export`.
 */
export const SHELL_VARIABLES: ReadonlySet<string> = new Set([
  "IFS",
  "PPID",
  "OPTIND",
  "LINENO",
  "PS1",
  "PS2",
  "PS4",
  "PWD",
  "OLDPWD",
  "ENV",
]);
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A single-quoted shell word: the value as it is, newlines included. */
export function shellWord(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/** The lines that make a spare into the child of `spec`, or undefined if a spare cannot be it. */
export function sparePrelude(spec: { argv: string[]; cwd: string; env: Record<string, string> }) {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(spec.env)) {
    if (!SHELL_NAME.test(name) || SHELL_VARIABLES.has(name) || name.startsWith("svc_")) return undefined;
    lines.push(`export ${name}=${shellWord(value)}`);
  }
  // a NUL cannot reach a process's argv or environment, and must not cut a line short here
  if ([spec.cwd, ...spec.argv, ...Object.values(spec.env)].some((word) => word.includes("\0")))
    return undefined;
  lines.push(`svc_cwd=${shellWord(spec.cwd)}`, `set -- ${spec.argv.map(shellWord).join(" ")}`, "");
  return lines.join("\n");
}
