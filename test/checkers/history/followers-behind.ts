// Checker 7b, followers kept up to date (docs/jepsen-lite.md "Checkers").
import type { FaultRecord } from './faults.js';

/** the leader's view at time t: each member's lag (entries behind the leader's last index) */
export interface LagSample {
  t: number;
  lags: Record<string, number>;
}

/**
 * No member stays far behind the leader while nothing explains it: a member whose lag is
 * at least `minLag` entries in every sample over `minMs` or more, none of it during a
 * fault or within `graceMs` after one healed, was left behind — the leader stopped feeding
 * it (a replication stall) while it, knowing only what the leader tells it, may even say
 * it is ready. A slow but working follower catches up within a second or two.
 */
export function checkFollowersBehind(samples: readonly LagSample[], faults: readonly FaultRecord[], o: { minLag: number; minMs: number; graceMs: number }): { violations: string[]; worstMs: Record<string, number> } {
  const quiet = (t: number): boolean => !faults.some((f) => t >= f.start && t <= f.end + o.graceMs);
  const violations: string[] = [];
  const worstMs: Record<string, number> = {};
  const ids = new Set(samples.flatMap((x) => Object.keys(x.lags)));
  for (const id of ids) {
    let from: LagSample | null = null;
    let reported = false;
    for (const x of samples) {
      const lag = x.lags[id];
      if (lag === undefined || lag < o.minLag || !quiet(x.t)) {
        from = null;
        continue;
      }
      from ??= x;
      const ms = x.t - from.t;
      worstMs[id] = Math.max(worstMs[id] ?? 0, ms);
      if (ms >= o.minMs && !reported) {
        reported = true;
        violations.push(`follower behind: ${id} was ${from.lags[id]}–${lag} entries behind the leader's log from t=${from.t.toFixed(0)} to t=${x.t.toFixed(0)} (${(ms / 1000).toFixed(1)} s) with no fault active or just healed`);
      }
    }
  }
  return { violations, worstMs };
}
