// What a node remembers for the status page that the replicated state does not hold:
// when it saw the leader change (the last hour), and when it applied each current grant
// (the FSM keeps no clocks: docs/architecture.md "Rules", rule 3). Local, best effort,
// bounded: a node that started (or installed a snapshot) after a grant reports "held at
// least since then".
import type { ApplyOutput } from '../../lock-fsm/index.js';
import type { HeldSince, LeaderChange } from '../../api/ops-service.js';

export const LEADER_HISTORY_MS = 3_600_000;
/** at most this many leader changes are kept (a flapping cluster must not grow memory) */
const MAX_LEADER_CHANGES = 2000;

export class OpsTracker {
  private readonly changes: LeaderChange[] = [];
  private lastLeader: string | null | undefined = undefined;
  /** lock name → the grants this node applied (token → when): one exclusive grant, or the
   *  shared grants of a shared lock */
  private readonly grants = new Map<string, Map<number, number>>();
  /** grants applied before this moment were not seen (start, snapshot install) */
  private blindUntilMs: number;

  constructor(private readonly wallMs: () => number, readonly startedAtMs: number = wallMs()) {
    this.blindUntilMs = startedAtMs;
  }

  /** driver onRoleChange: record a change of the known leader (null = none known) */
  onLeader(leader: string | null, term: number): void {
    if (leader === this.lastLeader) return;
    this.lastLeader = leader;
    this.changes.push({ at_ms: this.wallMs(), leader_id: leader, term });
    if (this.changes.length > MAX_LEADER_CHANGES) this.changes.splice(0, this.changes.length - MAX_LEADER_CHANGES);
  }

  /** driver onApplied: note grants; forget locks that were given up */
  onApplied(out: ApplyOutput | undefined): void {
    if (!out) return;
    const now = this.wallMs();
    // A release does not say which share it gave up: only a lone grant is dropped at once,
    // the others when prune finds them gone (a stale entry never answers: tokens differ).
    if (out.result.ok && out.result.kind === 'released' && (this.grants.get(out.result.name)?.size ?? 0) <= 1) this.grants.delete(out.result.name);
    for (const e of out.events) {
      if (e.type === 'granted') {
        const shares = e.mode === 'shared' ? this.grants.get(e.name) : undefined;
        if (shares) shares.set(e.fencingToken, now);
        else this.grants.set(e.name, new Map([[e.fencingToken, now]]));
      } else if (e.type === 'sessionEnded') {
        for (const n of e.released) if ((this.grants.get(n)?.size ?? 0) <= 1) this.grants.delete(n);
      }
    }
  }

  /** a snapshot replaced the state: grants in it were made while this node was not looking */
  onSnapshotRestored(): void {
    this.grants.clear();
    this.blindUntilMs = this.wallMs();
  }

  /** Leader changes within `windowMs` before now, oldest first. */
  leaderChanges(windowMs = LEADER_HISTORY_MS): LeaderChange[] {
    const from = this.wallMs() - windowMs;
    return this.changes.filter((c) => c.at_ms >= from);
  }

  heldSince(name: string, token: number): HeldSince {
    const at = this.grants.get(name)?.get(token);
    if (at !== undefined) return { since_ms: at, exact: true };
    return { since_ms: this.blindUntilMs, exact: false };
  }

  /** Drop entries whose lock is no longer held under that token (a bound, not a need:
   *  releases and session ends already delete). `holds(name, token)` asks the FSM. */
  prune(holds: (name: string, token: number) => boolean): void {
    for (const [name, g] of this.grants) {
      for (const token of g.keys()) if (!holds(name, token)) g.delete(token);
      if (g.size === 0) this.grants.delete(name);
    }
  }

  get trackedGrants(): number {
    let n = 0;
    for (const g of this.grants.values()) n += g.size;
    return n;
  }
}
