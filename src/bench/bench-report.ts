/** One line of the bench table: a measurement against its baseline from the same run. */
export interface BenchRow {
  scenario: string;
  metric: string;
  /** What Spark does. */
  value: number;
  /** What it replaces, measured in the same run. NaN when the baseline could not be measured. */
  baseline: number;
  unit: string;
  /** value / baseline. */
  ratio: number;
  /** The claim, e.g. "<= 0.5x"; "info" for a measurement that states none. */
  target: string;
  /** Whether the claim holds; null for an informational row or one without a baseline. */
  holds: boolean | null;
  detail?: string;
}

export function row(fields: Omit<BenchRow, "ratio" | "holds">, holds: (ratio: number) => boolean): BenchRow {
  const ratio = fields.baseline === 0 ? Number.NaN : fields.value / fields.baseline;
  return { ...fields, ratio, holds: Number.isFinite(ratio) ? holds(ratio) : null };
}

/** A comparison reported for context, without a claim to hold. */
export function infoRow(
  fields: Omit<BenchRow, "ratio" | "holds" | "target"> & { target?: string },
): BenchRow {
  const ratio = fields.baseline === 0 ? Number.NaN : fields.value / fields.baseline;
  return { ...fields, target: fields.target ?? "info", ratio, holds: null };
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return "n/a";
  return Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(Math.abs(n) >= 10 ? 1 : 2);
}

export function markdownTable(rows: BenchRow[]): string {
  const lines = [
    "| scenario | metric | Spark | baseline | ratio | target | holds |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of rows) {
    const holds = r.holds === null ? "-" : r.holds ? "yes" : "no";
    lines.push(
      `| ${r.scenario} | ${r.metric} | ${fmt(r.value)} ${r.unit} | ${fmt(r.baseline)} ${r.unit} | ${fmt(r.ratio)}x | ${r.target} | ${holds} |`,
    );
  }
  return lines.join("\n");
}

/** The details, one line per row that has one, for reading under the table. */
export function detailLines(rows: BenchRow[]): string {
  return rows
    .filter((r) => r.detail)
    .map((r) => `- ${r.scenario}, ${r.metric}: ${r.detail}`)
    .join("\n");
}
