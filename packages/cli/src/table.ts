/** Left-aligns text columns and right-aligns the ones listed in `right`. */
export function table(rows: readonly (readonly string[])[], right: ReadonlySet<number> = new Set()): string {
  return tableOf(() => rows, right);
}

/**
 * The same, from rows made twice (once to measure the columns, once to write them), so a listing
 * of 100,000 tensors holds its lines but never all its cells.
 */
export function tableOf(rows: () => Iterable<readonly string[]>, right: ReadonlySet<number> = new Set()): string {
  const widths: number[] = [];
  for (const row of rows()) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  const lines: string[] = [];
  for (const row of rows()) {
    let line = '';
    row.forEach((cell, i) => {
      line += (i === 0 ? '' : '  ') + (right.has(i) ? cell.padStart(widths[i]!) : i === row.length - 1 ? cell : cell.padEnd(widths[i]!));
    });
    lines.push(line.trimEnd());
  }
  return lines.join('\n');
}
