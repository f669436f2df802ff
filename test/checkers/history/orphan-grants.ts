// Checker 3b, no grant left behind (docs/jepsen-lite.md "Checkers").
import { describeOp, type Op } from './history.js';

/**
 * No lock stays held by a session whose client was told that every acquire of it failed
 * (docs/client.md "An acquire that fails never leaves a grant behind"). Evidence that
 * session s held lock L: a read of L naming s as holder, a `lock_held` answer naming s, or
 * a close of s whose `released` lists L. For each piece of evidence, the acquires of L by
 * s invoked before the evidence completed decide:
 * - all answered `fail` (a definite "not applied": lock_held, 503, 4xx): the evidence is
 *   a violation — the server answered "no" and granted anyway (e.g. a queued acquire
 *   answered 503 whose committed wait a later leader granted);
 * - all `fail` or given up (info `gave-up`) and each given-up one followed by a release
 *   of L in s (the client's cleanup): allowed up to s's next close after the give-up (a
 *   copy of the acquire the cluster applies after the cleanup can grant it until then),
 *   a violation after that close completed;
 * - an acquire answered `session_not_found` may have granted just before the session died
 *   (expiry after the grant, before the answer): that grant ends with the session, so the
 *   evidence may come until that answer, a violation after it;
 * - any other (an `ok` acquire, an info one the client did not clean up): no claim.
 */
export function checkNoOrphanGrants(ops: readonly Op[]): string[] {
  const violations: string[] = [];
  const acquires = new Map<string, Op[]>();
  const cleanups = new Map<string, Op[]>();
  const closes = new Map<string, Op[]>();
  const push = <T>(m: Map<string, T[]>, k: string, v: T): void => void m.set(k, [...(m.get(k) ?? []), v]);
  for (const op of ops) {
    const s = op.input.session;
    if (!s) continue;
    if (op.f === 'acquire' && op.input.lock) push(acquires, `${s}#${op.input.lock}`, op);
    if (op.f === 'release' && op.input.lock && op.input.token === undefined && op.type !== 'info') push(cleanups, `${s}#${op.input.lock}`, op);
    if (op.f === 'close' && op.type === 'ok') push(closes, s, op);
  }
  const evidence: { session: string; lock: string; op: Op }[] = [];
  for (const op of ops) {
    if (op.type === 'ok' && op.f === 'read' && op.input.lock && op.output.holder) evidence.push({ session: op.output.holder, lock: op.input.lock, op });
    if (op.type === 'fail' && op.f === 'acquire' && op.output.code === 'lock_held' && op.input.lock && op.output.holder) evidence.push({ session: op.output.holder, lock: op.input.lock, op });
    if (op.type === 'ok' && op.f === 'close' && op.input.session) for (const l of op.output.released ?? []) evidence.push({ session: op.input.session, lock: l, op });
  }
  const seen = new Set<string>();
  for (const e of evidence) {
    const k = `${e.session}#${e.lock}`;
    if (seen.has(k)) continue; // one report per session and lock
    const before = (acquires.get(k) ?? []).filter((a) => a.invoke < e.op.complete && a !== e.op);
    if (before.length === 0) continue;
    let graceEnds = -Infinity; // the evidence must come before this (the give-ups' next close)
    let claim = true;
    let diedWithIt = false;
    for (const a of before) {
      if (a.type === 'fail' && a.output.code === 'session_not_found') {
        // It may have granted just before the session died (the lock model treats this
        // answer as indeterminate: grant, expiry, then the answer). The session's end
        // released that grant, so it may be seen until this answer proved the session dead.
        graceEnds = Math.max(graceEnds, a.complete);
        diedWithIt = true;
        continue;
      }
      if (a.type === 'fail') continue;
      const gaveUp = a.type === 'info' && a.output.code === 'gave-up';
      const cleaned = gaveUp && (cleanups.get(k) ?? []).some((r) => r.invoke >= a.completedAt);
      if (!cleaned) {
        claim = false;
        break;
      }
      const close = (closes.get(e.session) ?? []).find((c) => c.invoke >= a.completedAt);
      graceEnds = Math.max(graceEnds, close ? close.complete : Infinity);
    }
    if (!claim) continue;
    const allFailed = graceEnds === -Infinity;
    if (!allFailed && e.op.invoke < graceEnds) continue;
    seen.add(k);
    const why = allFailed
      ? 'every acquire of it by that session was answered as failed'
      : diedWithIt
        ? 'every acquire of it by that session failed, was given up and cleaned up, or found the session gone, and the session has ended since'
        : 'its client gave up on every acquire of it, released it, and the session was closed since';
    violations.push(`orphan grant: ${e.lock} held by ${e.session.slice(0, 8)} although ${why}\n    ${describeOp(e.op)}\n${before.map((a) => `    ${describeOp(a)}`).join('\n')}`);
  }
  return violations;
}
