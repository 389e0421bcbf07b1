/**
 * Rows as aligned columns, kubectl's way: every column but the last padded to its widest
 * cell, two spaces apart. Returns the lines and the width before the last column (where
 * a row's further notes are indented to).
 */
export function columns(rows: string[][]): { lines: string[]; lastColumnAt: number } {
  const padded = Math.max(0, ...rows.map((row) => row.length - 1));
  const widths = Array.from({ length: padded }, (_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  const lines = rows.map((row) =>
    row
      .map((cell, column) => (column < padded ? cell.padEnd(widths[column]!) : cell))
      .join("  ")
      .trimEnd(),
  );
  return { lines, lastColumnAt: widths.reduce((sum, width) => sum + width + 2, 0) };
}
