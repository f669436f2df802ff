// "At most one log line per key per interval", so that a misconfigured or hostile peer
// cannot flood the log. Suppressed lines are counted and reported with the next one.
// The key table is bounded: past maxKeys it is cleared (worst case: a few extra lines).

export class LogLimiter {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 4096,
  ) {}

  /** null: stay quiet; otherwise the number of lines suppressed since the last one */
  allow(key: string): number | null {
    const t = this.now();
    const e = this.last.get(key);
    if (e && t - e.at < this.intervalMs) {
      e.suppressed++;
      return null;
    }
    if (!e && this.last.size >= this.maxKeys) this.last.clear();
    this.last.set(key, { at: t, suppressed: 0 });
    return e?.suppressed ?? 0;
  }
}
