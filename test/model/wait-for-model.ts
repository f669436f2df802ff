// The wait-for graph of docs/contract.md §5 as the reference models see it: a plain
// breadth-first search over explicit edge lists, written from docs/lock-fsm.md "Deadlock
// detection", not from deadlock.ts. Each model lists, for a session, its waiting requests
// (lock waits by name, then semaphore waits by name) and for each the sessions it waits
// for, in the documented order (the exclusive holder; every share, by token, for an
// exclusive request; a semaphore's holders by token; then the requests ahead, nearest
// first). The first way back to the requesting session is the cycle the state machine
// must answer `deadlock` with.
import type { CycleEntry } from '../../src/lock-fsm/index.js';

export interface ModelWait {
  name: string;
  kind: 'lock' | 'semaphore';
  /** the sessions this request waits for, in the documented order (repeats allowed) */
  blockers: string[];
}

/** the cycle that a new request of `requester` (its edges: `fresh`) closes, or null */
export function modelCycle(requester: string, fresh: ModelWait[], waitsOf: (sid: string) => ModelWait[]): CycleEntry[] | null {
  const via = new Map<string, { from: string; w: ModelWait }>();
  const frontier: string[] = [];
  let found: { from: string; w: ModelWait } | null = null;
  const follow = (from: string, w: ModelWait): boolean => {
    for (const to of w.blockers) {
      if (to === from) continue;
      if (to === requester) {
        found = { from, w };
        return true;
      }
      if (via.has(to)) continue;
      via.set(to, { from, w });
      frontier.push(to);
    }
    return false;
  };
  let done = fresh.some((w) => follow(requester, w));
  for (let i = 0; !done && i < frontier.length; i++) {
    const t = frontier[i] as string;
    done = waitsOf(t).some((w) => follow(t, w));
  }
  if (found === null) return null;
  const out: CycleEntry[] = [];
  let step: { from: string; w: ModelWait } = found;
  for (;;) {
    out.push(step.w.kind === 'semaphore' ? { sessionId: step.from, name: step.w.name, kind: 'semaphore' } : { sessionId: step.from, name: step.w.name });
    if (step.from === requester) break;
    step = via.get(step.from) as { from: string; w: ModelWait };
  }
  return out.reverse();
}
