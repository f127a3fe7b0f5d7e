/** One line of the bench table: a measurement against its baseline from the same run. */
export interface BenchRow {
  scenario: string;
  metric: string;
  /** What Spark does. */
  value: number;
  /** What it replaces, measured in the same run. */
  baseline: number;
  unit: string;
  /** value / baseline. */
  ratio: number;
  /** The claim, e.g. "<= 0.5". */
  target: string;
  holds: boolean;
  detail?: string;
}

export function row(fields: Omit<BenchRow, "ratio" | "holds">, holds: (ratio: number) => boolean): BenchRow {
  const ratio = fields.baseline === 0 ? Number.NaN : fields.value / fields.baseline;
  return { ...fields, ratio, holds: holds(ratio) };
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return "n/a";
  return Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(n >= 10 ? 1 : 2);
}

export function markdownTable(rows: BenchRow[]): string {
  const lines = [
    "| scenario | metric | Spark | baseline | ratio | target | holds |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.scenario} | ${r.metric} | ${fmt(r.value)} ${r.unit} | ${fmt(r.baseline)} ${r.unit} | ${fmt(r.ratio)}x | ${r.target} | ${r.holds ? "yes" : "no"} |`,
    );
  }
  return lines.join("\n");
}
