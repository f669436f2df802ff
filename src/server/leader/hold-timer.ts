// raftlock_lock_hold_seconds: how long each grant (a lock's exclusive or shared grant, a
// semaphore's permits) was held, from the apply that made it to the apply that ended it,
// on this node's monotonic clock. EVERY node observes (every node applies every entry), so
// a cluster-wide sum counts each grant once per node: aggregate one node, or take max.
// Grants this process did not see begin (restored from a snapshot, or made before it
// started) are not observed when they end.
//
// Every begin and end of a grant is an FSM event (docs/lock-fsm.md "Events for watch"):
// granted / semGranted begin one; released / semReleased (a release, or the end of the
// holder's session), resigned (an election's leader stepping down), revoked and
// grantExpired (max hold) end one, each naming the grant by its fencing token. So no
// state is read back after the apply.
import type { ApplyOutput, GrantKind } from '../../lock-fsm/index.js';
import type { Metrics } from '../../metrics.js';

type End = 'released' | 'session_ended' | 'max_hold' | 'revoked';

interface Held { kind: GrantKind; sessionId: string; sinceMs: number }

type Observer = { observe(v: number): void };

export class HoldTimer {
  /** fencing token → grant (tokens are unique over every kind of grant) */
  private readonly held = new Map<number, Held>();
  /** session → tokens held, for the end of a session whose grants ended by no event */
  private readonly bySession = new Map<string, Set<number>>();
  /** one pre-bound histogram child per (kind, end): a labelled observe hashes its labels */
  private readonly observers: Record<GrantKind, Record<End, Observer>>;

  constructor(metrics: Metrics) {
    const bind = (kind: GrantKind): Record<End, Observer> => {
      const c = (end: End): Observer => metrics.lockHold.labels({ kind, end });
      return { released: c('released'), session_ended: c('session_ended'), max_hold: c('max_hold'), revoked: c('revoked') };
    };
    this.observers = { lock: bind('lock'), semaphore: bind('semaphore') };
  }

  get size(): number {
    return this.held.size;
  }

  /** one applied entry's output, in log order (every node); nowMs: monotonic */
  onApplied(out: ApplyOutput, nowMs: number): void {
    if (out.replayed) return;
    for (const e of out.events) {
      switch (e.type) {
        case 'granted': this.start('lock', e.sessionId, e.fencingToken, nowMs); break;
        case 'semGranted': this.start('semaphore', e.sessionId, e.fencingToken, nowMs); break;
        case 'released':
        case 'semReleased':
          this.end(e.fencingToken, e.reason === 'released' ? 'released' : 'session_ended', nowMs);
          break;
        case 'resigned': this.end(e.fencingToken, 'released', nowMs); break;
        case 'revoked': this.end(e.fencingToken, 'revoked', nowMs); break;
        case 'grantExpired': this.end(e.fencingToken, 'max_hold', nowMs); break;
        case 'sessionEnded':
          // its grants' released events came first; this only clears what none named
          for (const t of [...(this.bySession.get(e.sessionId) ?? [])]) this.end(t, 'session_ended', nowMs);
          break;
      }
    }
  }

  private start(kind: GrantKind, sessionId: string, token: number, nowMs: number): void {
    this.held.set(token, { kind, sessionId, sinceMs: nowMs });
    let tokens = this.bySession.get(sessionId);
    if (tokens === undefined) this.bySession.set(sessionId, (tokens = new Set()));
    tokens.add(token);
  }

  private end(token: number, end: End, nowMs: number): void {
    const h = this.held.get(token);
    if (h === undefined) return;
    this.held.delete(token);
    const tokens = this.bySession.get(h.sessionId);
    tokens?.delete(token);
    if (tokens?.size === 0) this.bySession.delete(h.sessionId);
    this.observers[h.kind][end].observe(Math.max(0, nowMs - h.sinceMs) / 1000);
  }
}
