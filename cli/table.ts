/**
 * Text tables for commands that print rows: each column as wide as its widest cell, two spaces
 * apart, a header line first. Cells are single-line (newlines shown as spaces) so a row stays a row.
 */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map((cell) => String(cell ?? "-").replace(/\s+/g, " ")))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column]?.length ?? 0)));
  return cells
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** A rate as `90.0% (36/40)`, or `-` when nothing was counted. */
export function percent(rate: { count: number; n: number; rate: number | null }): string {
  return rate.rate === null ? "-" : `${(rate.rate * 100).toFixed(1)}% (${rate.count}/${rate.n})`;
}
