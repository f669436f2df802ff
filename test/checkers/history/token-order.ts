// Checker 3, fencing: tokens in real-time grant order (docs/jepsen-lite.md "Checkers").
import { ACQUIRES, describeOp, type Op } from './history.js';
import { knownGrants, type Grant } from './grants.js';

/** Tokens strictly increase in real-time grant order, across all locks and semaphores
 *  (one global sequence: docs/contract.md §4). */
export function checkTokenOrder(ops: readonly Op[]): string[] {
  const violations: string[] = [];
  const sems = knownGrants(ops, 'semaphore');
  // an election's leadership is a grant of the lock of its name (its own names: je-…)
  const grants = [...knownGrants(ops), ...knownGrants(ops, 'election'), ...sems];
  for (const g of grants) if (g.session.includes('|')) violations.push(`fencing: token ${g.token} of ${g.lock} was granted to two sessions (${g.session})`);
  // one token is one grant: not a lock's and a semaphore's
  const lockTokens = new Map(grants.filter((g) => !sems.includes(g)).map((g) => [g.token, g]));
  for (const g of sems) {
    const l = lockTokens.get(g.token);
    if (l) violations.push(`fencing: token ${g.token} was granted for lock ${l.lock} and for semaphore ${g.lock}\n    ${describeOp(l.op)}\n    ${describeOp(g.op)}`);
  }
  // When g was made: after its earliest acquire was invoked — unless something showed g
  // before that (a read, or an earlier answer): then that acquire found g already made (a
  // same-session acquire answers the grant it holds, e.g. one an acquire given up on got
  // later: docs/api.md "Release"), and g's start is not known. Nor is it when the session
  // sent an acquire of the name earlier whose outcome is unknown: that one can have made g
  // late (a relay held up by a partition), and the answer g's acquire got is the grant the
  // session held by then (CI, seed 334791129: token 729 answered after 741 was granted,
  // made by a copy given up on 7 s before).
  const unknown = unknownAcquires(ops);
  const from = (g: Grant): number => (g.complete < g.invoke ? -Infinity : Math.min(g.invoke, unknown.get(`${g.session}\u0000${g.lock}`) ?? Infinity));
  const byInvoke = [...grants].sort((a, b) => from(a) - from(b));
  const byComplete = [...grants].sort((a, b) => a.complete - b.complete);
  let k = 0;
  let best: Grant | null = null;
  for (const g of byInvoke) {
    // every grant that completed before g was invoked came before it in real time
    while (k < byComplete.length && byComplete[k]!.complete < from(g)) {
      const c = byComplete[k++]!;
      if (!best || c.token > best.token) best = c;
    }
    if (best && g.token <= best.token && !(g.lock === best.lock && g.token === best.token)) {
      violations.push(`fencing: token ${g.token} (${g.lock}) was granted after token ${best.token} (${best.lock}) had been granted\n    ${describeOp(best.op)}\n    ${describeOp(g.op)}`);
    }
  }
  return violations;
}

/** session + name → the earliest invoke of an acquire of the name by the session (a lock,
 *  a set naming it, a semaphore, a campaign) whose outcome is unknown (`info`) */
function unknownAcquires(ops: readonly Op[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const o of ops) {
    if (o.type !== 'info' || !ACQUIRES.has(o.f) || o.input.session === undefined) continue;
    const names = o.f === 'acquire-all' ? o.input.names ?? [] : o.input.lock !== undefined ? [o.input.lock] : [];
    for (const n of names) {
      const k = `${o.input.session}\u0000${n}`;
      out.set(k, Math.min(out.get(k) ?? Infinity, o.invoke));
    }
  }
  return out;
}
