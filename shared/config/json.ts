import type { ConfigProblem } from "./types.ts";

/** One problem as `--json` prints it: every field present (`line` null when YAML gave none). */
export interface ProblemJson {
  file: string;
  line: number | null;
  column: number | null;
  path: string;
  code: string;
  severity: ConfigProblem["severity"];
  message: string;
}

export function problemJson(problem: ConfigProblem): ProblemJson {
  return {
    file: problem.file,
    line: problem.line ?? null,
    column: problem.column ?? null,
    path: problem.path,
    code: problem.code,
    severity: problem.severity,
    message: problem.message,
  };
}
