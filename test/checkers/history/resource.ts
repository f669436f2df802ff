// Checker 3, fencing, at the fenced register: its log (resource.jsonl) against the tokens
// (docs/jepsen-lite.md "Checkers").
import type { ResourceLogEntry } from './resource-logs.js';

export interface ResourceReport {
  reads: number;
  writes: number;
  rejected: number;
  lostUpdates: number;
  staleAccepted: number;
  violations: string[];
}

/** The fenced register: never accepts a token below one it has seen; lost updates counted. */
export function checkResource(log: readonly ResourceLogEntry[], fencing: boolean): ResourceReport {
  const r: ResourceReport = { reads: 0, writes: 0, rejected: 0, lostUpdates: 0, staleAccepted: 0, violations: [] };
  const highest = new Map<string, number>();
  for (const e of [...log].sort((a, b) => a.seq - b.seq)) {
    if (e.op === 'read') r.reads++;
    else r.writes++;
    if (!e.accepted) {
      r.rejected++;
      continue;
    }
    const h = highest.get(e.lock) ?? 0;
    if (e.token < h) {
      r.staleAccepted++;
      if (fencing) r.violations.push(`fencing: the resource accepted token ${e.token} on ${e.lock} after token ${h} (entry ${e.seq})`);
    }
    highest.set(e.lock, Math.max(h, e.token));
    if (e.op === 'write' && e.lost) {
      r.lostUpdates++;
      if (fencing) r.violations.push(`lost update on ${e.lock}: write of ${e.value} with token ${e.token} was based on ${e.read}, but the register held ${e.before} (entry ${e.seq})`);
    }
  }
  return r;
}
