// Checker 5, liveness: recovery after each heal (docs/jepsen-lite.md "Checkers").
import type { Op } from './history.js';
import type { FaultRecord } from './faults.js';

export interface Recovery {
  variant: string;
  healedAt: number;
  /** ms from the heal to the next successful acquire; null if none came */
  recoveryMs: number | null;
}

export function recoveries(ops: readonly Op[], faults: readonly FaultRecord[], runEnd: number): Recovery[] {
  const grants = ops.filter((o) => (o.f === 'acquire' || o.f === 'sem-acquire' || o.f === 'campaign') && o.type === 'ok').map((o) => o.complete).sort((a, b) => a - b);
  return faults.map((f) => {
    const next = grants.find((t) => t >= f.end);
    return { variant: f.variant, healedAt: f.end, recoveryMs: next === undefined || next > runEnd ? null : next - f.end };
  });
}

export function checkLiveness(rs: readonly Recovery[], boundMs: number): string[] {
  return rs
    .filter((r) => r.recoveryMs === null || r.recoveryMs > boundMs)
    .map((r) => `liveness: after healing ${r.variant} at t=${r.healedAt.toFixed(0)} the next successful acquire took ${r.recoveryMs === null ? 'forever (none before the end)' : `${r.recoveryMs.toFixed(0)} ms`}, above the bound of ${boundMs} ms`);
}
