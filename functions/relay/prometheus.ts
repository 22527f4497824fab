/**
 * Just enough of the Prometheus text exposition format (version 0.0.4) for the relay's `/metrics`:
 * counters, gauges and histograms with labels. The relay is the only long-running process, and a
 * client library for this would outweigh the code that uses it.
 * https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
 */

export type Labels = Record<string, string>;

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

interface Metric {
  render(out: string[]): void;
}

abstract class Family<L extends string> implements Metric {
  protected readonly series = new Map<string, { labels: Labels; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    private readonly type: 'counter' | 'gauge',
  ) {}

  /** Current value of one series (0 when never touched). */
  get(labels: Partial<Record<L, string>> = {}): number {
    return this.series.get(this.key(labels))?.value ?? 0;
  }

  /** Sum over every series whose labels include `where`. */
  total(where: Partial<Record<L, string>> = {}): number {
    let sum = 0;
    for (const { labels, value } of this.series.values()) {
      if (Object.entries(where).every(([k, v]) => labels[k] === v)) sum += value;
    }
    return sum;
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`);
    for (const { labels, value } of this.series.values()) out.push(`${this.name}${formatLabels(labels)} ${num(value)}`);
  }

  protected add(labels: Partial<Record<L, string>>, delta: number, replace: boolean): void {
    const key = this.key(labels);
    const existing = this.series.get(key);
    if (existing) existing.value = replace ? delta : existing.value + delta;
    else this.series.set(key, { labels: this.complete(labels), value: delta });
  }

  private key(labels: Partial<Record<L, string>>): string {
    return this.labelNames.map((n) => labels[n] ?? '').join('\u0000');
  }

  private complete(labels: Partial<Record<L, string>>): Labels {
    return Object.fromEntries(this.labelNames.map((n) => [n, labels[n] ?? '']));
  }
}

export class Counter<L extends string = never> extends Family<L> {
  constructor(name: string, help: string, labelNames: readonly L[] = []) {
    super(name, help, labelNames, 'counter');
  }
  inc(labels: Partial<Record<L, string>> = {}, value = 1): void {
    if (value < 0) throw new Error(`counter ${this.name} cannot decrease`);
    this.add(labels, value, false);
  }
}

export class Gauge<L extends string = never> extends Family<L> {
  constructor(name: string, help: string, labelNames: readonly L[] = []) {
    super(name, help, labelNames, 'gauge');
  }
  set(labels: Partial<Record<L, string>>, value: number): void {
    this.add(labels, value, true);
  }
}

export class Histogram<L extends string = never> implements Metric {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    readonly buckets: readonly number[],
  ) {}

  observe(labels: Partial<Record<L, string>>, value: number): void {
    const key = this.labelNames.map((n) => labels[n] ?? '').join('\u0000');
    let series = this.series.get(key);
    if (!series) {
      const full = Object.fromEntries(this.labelNames.map((n) => [n, labels[n] ?? '']));
      series = { labels: full, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) series.counts[i]!++;
    series.sum += value;
    series.count++;
  }

  count(labels: Partial<Record<L, string>> = {}): number {
    return this.series.get(this.labelNames.map((n) => labels[n] ?? '').join('\u0000'))?.count ?? 0;
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} histogram`);
    for (const { labels, counts, sum, count } of this.series.values()) {
      // Bucket counts are cumulative already: each observation was counted in every bucket it fits.
      this.buckets.forEach((le, i) => {
        out.push(`${this.name}_bucket${formatLabels({ ...labels, le: num(le) })} ${counts[i]}`);
      });
      out.push(`${this.name}_bucket${formatLabels({ ...labels, le: '+Inf' })} ${count}`);
      out.push(`${this.name}_sum${formatLabels(labels)} ${num(sum)}`);
      out.push(`${this.name}_count${formatLabels(labels)} ${count}`);
    }
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];
  private readonly collectors: (() => void)[] = [];

  register<M extends Metric>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }

  /** Runs before every render, to refresh gauges sampled from elsewhere (memory, CPU). */
  onCollect(collect: () => void): void {
    this.collectors.push(collect);
  }

  render(): string {
    for (const collect of this.collectors) collect();
    const out: string[] = [];
    for (const metric of this.metrics) metric.render(out);
    return `${out.join('\n')}\n`;
  }
}

function formatLabels(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function num(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}
