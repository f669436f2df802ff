// The percentile the disk benchmarks print: of latencies sorted ascending, the one at
// floor(p% of the count) (NaN for none). bench/lock/trace.ts keeps its own nearest-rank one.
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}
