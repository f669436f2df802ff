// Checker 6, the nodes' memory (docs/jepsen-lite.md "Checkers").

export function checkMemory(rss: ReadonlyMap<string, [number, number][]>, limitBytes: number): { violations: string[]; maxMb: Record<string, number>; trendMb: Record<string, [number, number]> } {
  const violations: string[] = [];
  const maxMb: Record<string, number> = {};
  const trendMb: Record<string, [number, number]> = {};
  const mb = (xs: [number, number][]): number => Math.round(xs.reduce((m, [, b]) => Math.max(m, b), 0) / 1048576);
  for (const [id, samples] of rss) {
    if (samples.length) {
      const t0 = samples[0]![0];
      const t1 = samples[samples.length - 1]![0];
      trendMb[id] = [mb(samples.filter(([t]) => t <= t0 + 60_000)), mb(samples.filter(([t]) => t >= t1 - 60_000))];
    }
    const max = samples.reduce((m, [, b]) => Math.max(m, b), 0);
    maxMb[id] = Math.round(max / 1048576);
    if (max > limitBytes) violations.push(`memory: ${id} reached ${maxMb[id]} MB resident, above the bound of ${Math.round(limitBytes / 1048576)} MB`);
  }
  return { violations, maxMb, trendMb };
}
