// the check itself is shared with the tool protocol's keep_result_so_far
export { checkResult } from "../../shared/result-check.ts";

/** The last line of the output that parses as a JSON object, else the whole output when it is one. */
export function lastJsonObject(output: string): Record<string, unknown> | undefined {
  const lines = output.split(/\r?\n/);
  for (let index = lines.length - 1; index >= 0; index -= 1) {
    const line = lines[index]!.trim();
    if (!line.startsWith("{")) continue;
    try {
      const value = JSON.parse(line);
      if (value !== null && typeof value === "object" && !Array.isArray(value)) return value;
    } catch {
      // not JSON: keep looking upwards
    }
  }
  const whole = output.trim();
  const start = whole.lastIndexOf("\n{");
  for (const candidate of [whole, start >= 0 ? whole.slice(start + 1) : ""]) {
    if (!candidate.startsWith("{")) continue;
    try {
      const value = JSON.parse(candidate);
      if (value !== null && typeof value === "object" && !Array.isArray(value)) return value;
    } catch {
      // not JSON either: no result object in this output, which the caller reports
    }
  }
  return undefined;
}
