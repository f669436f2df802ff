// Checker 2, lease safety (docs/jepsen-lite.md "Checkers").
import { describeOp, type Op } from './history.js';
import { grantWindows, knownGrants, type Grant, type Ttl } from './grants.js';

/**
 * No lock is granted to another session while the holder's safe window is open: from the
 * SEND time of any acknowledged acquire/renew/keepalive of the holder's session plus the
 * TTL (the contract's "never early"), unless the holder released the lock (or closed its
 * session) before. A grant to s2 is proven by the time its acquire returned, so the check
 * is: s2's grant completed before s1's window closed, and s1 had not started to let go.
 */
export function checkLeaseSafety(ops: readonly Op[], ttl: Ttl): string[] {
  const violations: string[] = [];
  const win = grantWindows(ops, ttl);
  // a grant is proven by its acquire's answer or by an earlier read or renew that saw it
  const grants = knownGrants(ops);
  const byLock = new Map<string, Grant[]>();
  for (const g of grants) byLock.set(g.lock, [...(byLock.get(g.lock) ?? []), g]);
  for (const [lock, gs] of byLock) {
    gs.sort((a, b) => a.token - b.token);
    for (let i = 0; i < gs.length; i++) {
      const g1 = gs[i]!;
      const w = win.safeUntil(g1.session);
      if (!w) continue;
      const end = win.end(g1);
      for (let j = i + 1; j < gs.length; j++) {
        const g2 = gs[j]!;
        if (g2.session === g1.session) continue;
        if (g2.complete < end) {
          violations.push(
            `lease: ${lock} granted to ${g2.session.slice(0, 8)} (token ${g2.token}) by t=${g2.complete.toFixed(1)} while ${g1.session.slice(0, 8)} (token ${g1.token}) was safe until ${w.t.toFixed(1)} ` +
              `(acknowledged ${w.op.f} sent at ${w.op.invoke.toFixed(1)}) and had not released it, nor been revoked or reached a max hold${end < w.t ? ` before ${end.toFixed(1)}` : ''}\n    ${describeOp(g1.op)}${w.op === g1.op ? '' : `\n    ${describeOp(w.op)}`}\n    ${describeOp(g2.op)}`,
          );
        }
        break; // only the next grant after g1 matters; later ones follow from it
      }
    }
  }
  return violations;
}
