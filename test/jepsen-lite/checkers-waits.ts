// Checker 14, waits end by their wait_ms (docs/api.md "Waits"): a queued acquire waits at
// most its wait_ms from its last arrival (a retry with the same key may extend it), plus
// the log time elections do not count, whichever node proposed it and however many
// leaders came between. The history cannot see when a wait ended, but fencing tokens order
// grants: a grant with token T of an exclusive lock came after every grant with a lower
// token. So when an operation invoked after the wait's deadline saw the lock held with a
// lower token (a read naming the holder, or an acquire granted then), the wait's grant T
// came after that deadline — the wait outlived its wait_ms. T is the acquire's own answer,
// or, for one whose answer was lost, the token a later read shows its session holding
// before the session acquires the name again.
import { describeOp, type Op } from './history.js';
import { isSharedLock } from './workloads.js';

/** `gapMs`: the log time elections may leave uncounted (the runner's liveness bound); a
 *  fault window overlapping a wait's span adds its length (a leader paused, cut off or
 *  running a slow clock stamps less log time than real time passes) */
export function checkWaitBounds(ops: readonly Op[], gapMs: number, faults: readonly { start: number; end: number }[] = []): string[] {
  const v: string[] = [];
  const byLock = new Map<string, Op[]>();
  for (const o of ops) {
    const l = o.input.lock;
    if (!l || isSharedLock(l) || (o.f !== 'acquire' && o.f !== 'read')) continue;
    let xs = byLock.get(l);
    if (!xs) byLock.set(l, (xs = []));
    xs.push(o);
  }
  for (const [lock, xs] of byLock) {
    // observations: (invoke time, token current then)
    const seen: { at: number; token: number; op: Op }[] = [];
    for (const o of xs) {
      if (o.type !== 'ok') continue;
      if (o.f === 'read' && o.output.holder_token !== undefined) seen.push({ at: o.invoke, token: o.output.holder_token, op: o });
      if (o.f === 'acquire' && o.output.token !== undefined && o.output.token > 0) seen.push({ at: o.invoke, token: o.output.token, op: o });
    }
    for (const a of xs) {
      const w = a.input.wait_ms;
      const s = a.input.session;
      if (a.f !== 'acquire' || !w || !s || a.type === 'fail' || a.input.mode === 'shared') continue;
      let token = a.type === 'ok' ? a.output.token : undefined;
      if (token === undefined) {
        // a lost answer: the session's grant a later read shows, before its next acquire of the name
        const next = xs.find((o) => o.f === 'acquire' && o.input.session === s && o.invoke > a.invoke);
        const r = xs.find((o) => o.f === 'read' && o.type === 'ok' && o.output.holder === s && o.invoke > a.invoke && (!next || o.completedAt < next.invoke));
        token = r?.output.holder_token;
      }
      if (token === undefined || token < 1) continue;
      const from = a.output.last_try ?? a.completedAt;
      let deadline = from + w + gapMs;
      for (const f of faults) if (f.start <= deadline && f.end >= from) deadline += f.end - Math.max(f.start, from);
      const b = seen.find((x) => x.at > deadline && x.token < token && x.op !== a);
      if (b) v.push(`waits: ${lock}: the wait of ${a.id} (session ${s.slice(0, 8)}, wait_ms ${w}, last sent at ${(a.output.last_try ?? a.completedAt).toFixed(0)}) was granted token ${token} after ${b.at.toFixed(0)} ms, when the lock was still at token ${b.token} — past its deadline ${deadline.toFixed(0)} (wait_ms + ${gapMs} ms for elections)\n    ${describeOp(a)}\n    ${describeOp(b.op)}`);
    }
  }
  return v;
}
