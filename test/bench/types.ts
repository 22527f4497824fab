/** One figure a benchmark reports; `rerun` says how to measure just this figure again. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  target?: string;
  rerun: string;
  note?: string;
}

export type Benchmark = () => Promise<BenchResult[]>;
