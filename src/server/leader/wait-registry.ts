// Acquire requests waiting in a lock's FIFO queue, on the leader. The FSM decides who gets
// the lock; this registry only wakes the HTTP request whose session the FSM just granted
// (or whose wait it ended). Several requests may wait for the same (lock, session): a
// client that retried with its Idempotency-Key after a 504.
import type { FsmEvent, HolderInfo } from '../../lock-fsm/index.js';

export type WaitOutcome =
  /** the grant as its event carried it (the waiting request answers from it, not from a
   *  re-read): mode 'shared' for a lock's shared grant; value for a campaign's (an
   *  election's leadership); permits and limit for a semaphore's */
  | { kind: 'granted'; fencingToken: number; mode?: 'shared'; value?: string; permits?: number; limit?: number }
  | { kind: 'cancelled'; holder: HolderInfo | undefined }
  | { kind: 'session_ended' }
  /** the client went away */
  | { kind: 'aborted' }
  /** this node is shutting down (the wait itself stays committed: the next leader re-arms it) */
  | { kind: 'shutdown' }
  /** leadership moved, or the backstop timer fired: the outcome is not known here */
  | { kind: 'unknown' };

interface Waiter {
  sessionId: string;
  settle: (o: WaitOutcome) => void;
}

const key = (name: string, sessionId: string): string => `${name}\u0000${sessionId}`;
/** a semaphore's waits are registered under this prefix (no lock name holds U+0001) */
export const SEMAPHORE_PREFIX = '\u0001';

export class WaitRegistry {
  private readonly byKey = new Map<string, Set<Waiter>>();
  /** session id → number of waiting requests (their sessions are kept alive) */
  private readonly sessions = new Map<string, number>();

  wait(name: string, sessionId: string, timeoutMs: number, signal: AbortSignal): Promise<WaitOutcome> {
    return new Promise((resolve) => {
      const k = key(name, sessionId);
      let set = this.byKey.get(k);
      if (!set) this.byKey.set(k, (set = new Set()));
      const onAbort = (): void => settle({ kind: 'aborted' });
      const timer = setTimeout(() => settle({ kind: 'unknown' }), timeoutMs);
      const w: Waiter = {
        sessionId,
        settle: (o) => settle(o),
      };
      let done = false;
      const settle = (o: WaitOutcome): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        set!.delete(w);
        if (set!.size === 0) this.byKey.delete(k);
        const n = (this.sessions.get(sessionId) ?? 1) - 1;
        if (n <= 0) this.sessions.delete(sessionId);
        else this.sessions.set(sessionId, n);
        resolve(o);
      };
      set.add(w);
      this.sessions.set(sessionId, (this.sessions.get(sessionId) ?? 0) + 1);
      if (signal.aborted) settle({ kind: 'aborted' });
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  onEvent(e: FsmEvent, holderOf: (name: string) => HolderInfo | undefined): void {
    if (e.type === 'granted') this.settleAll(key(e.name, e.sessionId), grantedOf(e));
    else if (e.type === 'semGranted') this.settleAll(key(SEMAPHORE_PREFIX + e.name, e.sessionId), { kind: 'granted', fencingToken: e.fencingToken, permits: e.permits, limit: e.limit });
    else if (e.type === 'semWaitEnded') this.settleAll(key(SEMAPHORE_PREFIX + e.name, e.sessionId), e.reason === 'cancelled' ? { kind: 'cancelled', holder: undefined } : { kind: 'session_ended' });
    else if (e.type === 'waitEnded') {
      this.settleAll(key(e.name, e.sessionId), e.reason === 'cancelled' ? { kind: 'cancelled', holder: holderOf(e.name) } : { kind: 'session_ended' });
    }
  }

  abortAll(o: WaitOutcome): void {
    for (const set of [...this.byKey.values()]) for (const w of [...set]) w.settle(o);
  }

  sessionsWaiting(): Iterable<string> {
    return this.sessions.keys();
  }

  get size(): number {
    let n = 0;
    for (const s of this.byKey.values()) n += s.size;
    return n;
  }

  private settleAll(k: string, o: WaitOutcome): void {
    const set = this.byKey.get(k);
    if (!set) return;
    for (const w of [...set]) w.settle(o);
  }
}

/** a lock's `granted` event as its waiting request's outcome */
function grantedOf(e: Extract<FsmEvent, { type: 'granted' }>): WaitOutcome {
  const o: WaitOutcome = { kind: 'granted', fencingToken: e.fencingToken };
  if (e.mode === 'shared') o.mode = 'shared';
  if (e.value !== undefined) o.value = e.value;
  return o;
}
