/** Lines of a plain text table: a header row and the rows, each column as wide as its widest cell. */
export function tableLines(columns: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = columns.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(columns), ...rows.map(line)];
}

/**
 * A text table for commands that print rows, as one string. Cells are single-line (newlines shown
 * as spaces) so a row stays a row; an absent value is `-`.
 */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = rows.map((row) => row.map((cell) => String(cell ?? "-").replace(/\s+/g, " ")));
  return tableLines(headers, cells).join("\n");
}

/** A rate as `90.0% (36/40)`, or `-` when nothing was counted. */
export function percent(rate: { count: number; n: number; rate: number | null }): string {
  return rate.rate === null ? "-" : `${(rate.rate * 100).toFixed(1)}% (${rate.count}/${rate.n})`;
}
