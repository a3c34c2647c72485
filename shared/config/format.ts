import type { ConfigProblem } from "./types.ts";

export { isLoopbackHost } from "./network.ts";

/**
 * The human listing of configuration problems, grouped by file in the order given:
 *
 *   pipelines/a.yaml (2 errors)
 *     error   line 3, col 1  output  [removed_key]
 *       pipelines/a.yaml: "output" is removed; migrate to "result" and "outputs"
 *
 * Each message already names the file, so a single line copied out of the listing still says where.
 */
export function formatProblems(problems: readonly ConfigProblem[]): string {
  const byFile = new Map<string, ConfigProblem[]>();
  for (const problem of problems) {
    const group = byFile.get(problem.file);
    if (group) group.push(problem);
    else byFile.set(problem.file, [problem]);
  }
  const lines: string[] = [];
  for (const [file, group] of byFile) {
    lines.push(`${file} (${countLabel(group)})`);
    for (const problem of group) {
      const where =
        problem.line === undefined
          ? ""
          : `line ${problem.line}${problem.column ? `, col ${problem.column}` : ""}`;
      const head = [problem.severity.padEnd(7), where, problem.path, `[${problem.code}]`]
        .filter(Boolean)
        .join("  ");
      lines.push(`  ${head}`);
      lines.push(`    ${problem.message}`);
    }
  }
  return lines.join("\n");
}

function countLabel(group: readonly ConfigProblem[]): string {
  const errors = group.filter((problem) => problem.severity === "error").length;
  const warnings = group.length - errors;
  const parts: string[] = [];
  if (errors) parts.push(`${errors} error${errors === 1 ? "" : "s"}`);
  if (warnings) parts.push(`${warnings} warning${warnings === 1 ? "" : "s"}`);
  return parts.join(", ");
}

/** `3 errors, 1 warning in 2 files` */
export function summarizeProblems(problems: readonly ConfigProblem[]): string {
  const errors = problems.filter((problem) => problem.severity === "error").length;
  const warnings = problems.length - errors;
  const files = new Set(problems.map((problem) => problem.file)).size;
  return `${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"} in ${files} file${files === 1 ? "" : "s"}`;
}
