/**
 * A tiny Prometheus text exposition (format 0.0.4): counters, gauges and histograms with labels.
 * No dependency: Spark needs a dozen series, not a client library.
 */

export type Labels = Record<string, string>;

interface Series<T> {
  labels: Labels;
  value: T;
}

abstract class Metric<T> {
  protected readonly series = new Map<string, Series<T>>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  abstract readonly kind: "counter" | "gauge" | "histogram";

  protected entry(labels: Labels, initial: () => T): Series<T> {
    const key = this.labelNames.map((name) => labels[name] ?? "").join("\u0000");
    let series = this.series.get(key);
    if (!series) {
      const own: Labels = {};
      for (const name of this.labelNames) own[name] = labels[name] ?? "";
      series = { labels: own, value: initial() };
      this.series.set(key, series);
    }
    return series;
  }

  abstract samples(): string[];

  render(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.kind}`];
    return [...lines, ...this.samples()].join("\n");
  }
}

/** A value that only goes up (reset only by a restart). */
export class Counter extends Metric<number> {
  readonly kind = "counter";

  inc(labels: Labels, by = 1): void {
    if (!(by >= 0)) return; // a counter never goes down; NaN is dropped too
    this.entry(labels, () => 0).value += by;
  }

  get(labels: Labels): number {
    return this.entry(labels, () => 0).value;
  }

  samples(): string[] {
    return [...this.series.values()].map((s) => sample(this.name, s.labels, s.value));
  }
}

/** A value that goes up and down. */
export class Gauge extends Metric<number> {
  readonly kind = "gauge";

  set(labels: Labels, value: number): void {
    this.entry(labels, () => 0).value = value;
  }

  inc(labels: Labels, by = 1): void {
    this.entry(labels, () => 0).value += by;
  }

  dec(labels: Labels, by = 1): void {
    this.entry(labels, () => 0).value -= by;
  }

  get(labels: Labels): number {
    return this.entry(labels, () => 0).value;
  }

  samples(): string[] {
    return [...this.series.values()].map((s) => sample(this.name, s.labels, s.value));
  }
}

interface HistogramValue {
  counts: number[];
  sum: number;
  count: number;
}

/** Observations counted into cumulative buckets (`le`), with their sum and count. */
export class Histogram extends Metric<HistogramValue> {
  readonly kind = "histogram";

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames);
  }

  observe(labels: Labels, value: number): void {
    if (!Number.isFinite(value)) return;
    const series = this.entry(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    const at = this.buckets.findIndex((bound) => value <= bound);
    if (at !== -1) series.value.counts[at]! += 1;
    series.value.sum += value;
    series.value.count += 1;
  }

  samples(): string[] {
    const lines: string[] = [];
    for (const { labels, value } of this.series.values()) {
      let cumulative = 0;
      for (const [index, bound] of this.buckets.entries()) {
        cumulative += value.counts[index]!;
        lines.push(sample(`${this.name}_bucket`, { ...labels, le: formatNumber(bound) }, cumulative));
      }
      lines.push(sample(`${this.name}_bucket`, { ...labels, le: "+Inf" }, value.count));
      lines.push(sample(`${this.name}_sum`, labels, value.sum));
      lines.push(sample(`${this.name}_count`, labels, value.count));
    }
    return lines;
  }
}

/** The metrics of one server; `collect` callbacks refresh computed gauges before each scrape. */
export class MetricRegistry {
  private readonly metrics: { name: string; render(): string }[] = [];
  private readonly collectors: (() => void)[] = [];

  counter(name: string, help: string, labelNames: readonly string[]): Counter {
    return this.add(new Counter(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[]): Gauge {
    return this.add(new Gauge(name, help, labelNames));
  }

  histogram(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ): Histogram {
    return this.add(
      new Histogram(
        name,
        help,
        labelNames,
        [...buckets].sort((a, b) => a - b),
      ),
    );
  }

  /** Runs before every render, e.g. to read queue depths into gauges. */
  onCollect(collect: () => void): void {
    this.collectors.push(collect);
  }

  /** The text exposition, ending with a newline. */
  render(): string {
    for (const collect of this.collectors) collect();
    return `${this.metrics.map((metric) => metric.render()).join("\n")}\n`;
  }

  private add<M extends { name: string; render(): string }>(metric: M): M {
    if (this.metrics.some((m) => m.name === metric.name)) throw new Error(`Duplicate metric ${metric.name}`);
    this.metrics.push(metric);
    return metric;
  }
}

function sample(name: string, labels: Labels, value: number): string {
  const pairs = Object.entries(labels).map(([key, v]) => `${key}="${escapeLabel(v)}"`);
  return `${name}${pairs.length ? `{${pairs.join(",")}}` : ""} ${formatNumber(value)}`;
}

function formatNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  if (Number.isNaN(value)) return "NaN";
  return String(value);
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}
