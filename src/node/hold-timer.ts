// raftlock_lock_hold_seconds: how long each grant (a lock's exclusive or shared grant, a
// semaphore's permits) was held, from the apply that made it to the apply that ended it,
// on this node's monotonic clock. EVERY node observes (every node applies every entry), so
// a cluster-wide sum counts each grant once per node: aggregate one node, or take max.
// Grants this process did not see begin (restored from a snapshot, or made before it
// started) are not observed when they end.
//
// The FSM reports grants (granted / semGranted) and some ends by event (revoked,
// grantExpired, sessionEnded); a release has only its result (released / sem_released
// with the name), so the grants of that name are checked against the state after the apply.
import type { ApplyOutput, GrantKind, LockFsm } from '../lock-fsm/index.js';
import type { Metrics } from '../metrics.js';

type End = 'released' | 'session_ended' | 'max_hold' | 'revoked';

interface Held { kind: GrantKind; name: string; sessionId: string; token: number; sinceMs: number }

export class HoldTimer {
  /** fencing token → grant (tokens are unique over every kind of grant) */
  private readonly held = new Map<number, Held>();
  /** kind+name → tokens held; session → tokens held */
  private readonly byName = new Map<string, Set<number>>();
  private readonly bySession = new Map<string, Set<number>>();

  constructor(private readonly metrics: Metrics) {}

  get size(): number {
    return this.held.size;
  }

  /** one applied entry's output, in log order (every node); nowMs: monotonic */
  onApplied(out: ApplyOutput, fsm: LockFsm, nowMs: number): void {
    if (out.replayed) return;
    for (const e of out.events) {
      switch (e.type) {
        case 'granted': this.start('lock', e.name, e.sessionId, e.fencingToken, nowMs); break;
        case 'semGranted': this.start('semaphore', e.name, e.sessionId, e.fencingToken, nowMs); break;
        case 'revoked': this.end(e.fencingToken, 'revoked', nowMs); break;
        case 'grantExpired': this.end(e.fencingToken, 'max_hold', nowMs); break;
        case 'sessionEnded':
          for (const t of [...(this.bySession.get(e.sessionId) ?? [])]) this.end(t, 'session_ended', nowMs);
          break;
      }
    }
    const r = out.result;
    if (r.ok && (r.kind === 'released' || r.kind === 'sem_released')) {
      const kind: GrantKind = r.kind === 'released' ? 'lock' : 'semaphore';
      for (const t of [...(this.byName.get(nameKey(kind, r.name)) ?? [])]) {
        const h = this.held.get(t) as Held;
        if (!fsm.holdsGrant(kind, h.name, h.sessionId, t)) this.end(t, 'released', nowMs);
      }
    }
  }

  private start(kind: GrantKind, name: string, sessionId: string, token: number, nowMs: number): void {
    this.held.set(token, { kind, name, sessionId, token, sinceMs: nowMs });
    add(this.byName, nameKey(kind, name), token);
    add(this.bySession, sessionId, token);
  }

  private end(token: number, end: End, nowMs: number): void {
    const h = this.held.get(token);
    if (h === undefined) return;
    this.held.delete(token);
    remove(this.byName, nameKey(h.kind, h.name), token);
    remove(this.bySession, h.sessionId, token);
    this.metrics.lockHold.observe({ kind: h.kind, end }, Math.max(0, nowMs - h.sinceMs) / 1000);
  }
}

function nameKey(kind: GrantKind, name: string): string {
  return `${kind === 'semaphore' ? 's' : 'l'}${name}`;
}

function add(m: Map<string, Set<number>>, k: string, t: number): void {
  let s = m.get(k);
  if (s === undefined) m.set(k, (s = new Set()));
  s.add(t);
}

function remove(m: Map<string, Set<number>>, k: string, t: number): void {
  const s = m.get(k);
  s?.delete(t);
  if (s?.size === 0) m.delete(k);
}
