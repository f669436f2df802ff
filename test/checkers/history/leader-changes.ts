// Checker 7, leader stability (docs/jepsen-lite.md "Checkers").
import type { FaultRecord } from './faults.js';

/** A node took office: from its log's `role changed` line with role `leader`. */
export interface LeaderElection {
  /** run time (ms since the run started, the history's clock) */
  t: number;
  node: string;
  term: number;
}

/** faults that leave no leader: every voter killed, or a majority (unsynced) */
const LEADERLESS: ReadonlySet<string> = new Set(['kill-all', 'unsynced']);

/**
 * No leader change without a fault. A fault explains every election from its start until
 * `graceMs` after its heal: a partition or a pause deposes the leader while it lasts, and a
 * restarted cluster needs up to one election timeout before its first campaign plus one
 * more for a split vote (graceMs = 2 × the maximum election timeout). The first election of
 * the run is the cluster forming, not a change; so is the first election after a fault
 * that left no leader (LEADERLESS), up to `reformMs` after its heal: there is no leader for
 * it to change, and how long the cluster took to form again is the recovery checker's
 * (checkLiveness holds the first grant after the heal to the same bound). CI seed
 * 1146293336: after a kill-all on a loaded machine, two nodes' event loops blocked for
 * ~0.4 s at once, and the first leader took office 2,089 ms after the heal, its grant
 * within the bound. Anything else is a needless election: the leader went silent (a
 * blocked loop, a slow disk, a link in backoff) or a node disrupted a healthy leader —
 * each costs clients an election and every session's TTL restarting.
 */
export function checkLeaderChanges(elections: readonly LeaderElection[], faults: readonly FaultRecord[], graceMs: number, runEnd: number, reformMs = graceMs): string[] {
  const byTerm = new Map<number, LeaderElection>();
  for (const e of elections) {
    const cur = byTerm.get(e.term);
    if (!cur || e.t < cur.t) byTerm.set(e.term, e);
  }
  const sorted = [...byTerm.values()].sort((a, b) => a.term - b.term);
  const violations: string[] = [];
  for (const e of sorted.slice(1)) {
    if (e.t > runEnd) continue; // the final restart and the clients' goodbyes are not the workload
    const explained = faults.some((f) => e.t >= f.start && e.t <= f.end + graceMs);
    if (explained) continue;
    const reforming = faults.some((f) => LEADERLESS.has(f.variant) && e.t >= f.start && e.t <= f.end + reformMs && !sorted.some((x) => x.t > f.start && x.t < e.t));
    if (reforming) continue;
    const before = faults.filter((f) => f.end <= e.t).at(-1);
    const last = before ? `the last fault (${before.variant}) healed at t=${before.end.toFixed(0)}, ${(e.t - before.end).toFixed(0)} ms before` : 'no fault had happened yet';
    violations.push(`leader change without a fault: ${e.node} became leader of term ${e.term} at t=${e.t.toFixed(0)}; ${last} (grace ${graceMs} ms after a heal)`);
  }
  return violations;
}

/** The elections in a node's JSON log (pino lines; `time` is wall-clock ms), on the run's
 *  clock: `wallAtZero` is Date.now() when the run's clock read 0. */
export function electionsInLog(node: string, text: string, wallAtZero: number): LeaderElection[] {
  const out: LeaderElection[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"role changed"')) continue;
    try {
      const j = JSON.parse(line) as { time?: unknown; role?: unknown; term?: unknown; msg?: unknown };
      if (j.msg !== 'role changed' || j.role !== 'leader' || typeof j.time !== 'number' || typeof j.term !== 'number') continue;
      out.push({ t: j.time - wallAtZero, node, term: j.term });
    } catch {
      /* a line cut short by kill -9 */
    }
  }
  return out;
}
