import { isAbsolute } from "node:path";
import { findOnPath } from "../../../executables.ts";

/** a word that means the same with and without a shell: no quoting, globbing, expansion or operators */
const PLAIN_WORD = /^[A-Za-z0-9_./=:@%+,-]+$/;
/** `$name`, a whole argument: host tools substitute inputs into argv elements themselves */
const INPUT_REFERENCE = /^\$[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Splits an old host-tool `run:` command line into `exec` and `args` when a shell adds nothing to it:
 * plain words and whole-word `$input` references. Anything else (quotes, pipes, redirections,
 * globs, `$VAR` inside a word) is left to the operator, because guessing a shell's meaning could run
 * something else. A bare command name is resolved on `PATH`, as the shell would have.
 */
export function splitCommand(
  run: string,
  env: NodeJS.ProcessEnv,
): { exec: string; args: string[] } | { reason: string } {
  const words = run
    .trim()
    .split(/[ \t]+/)
    .filter(Boolean);
  const [first, ...args] = words;
  if (!first) return { reason: '"run" is empty' };
  const odd = words.find((word) => !PLAIN_WORD.test(word) && !INPUT_REFERENCE.test(word));
  if (odd !== undefined || run.includes("\n"))
    return { reason: `"run" needs a shell (${JSON.stringify(odd ?? "a line break")})` };
  if (INPUT_REFERENCE.test(first)) return { reason: "the executable itself is an input reference" };
  const exec = isAbsolute(first) ? first : findOnPath(first, env);
  if (!exec) return { reason: `"${first}" is not on PATH here, so its absolute path is unknown` };
  return { exec, args };
}
