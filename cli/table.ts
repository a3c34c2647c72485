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
