// Checker 4, durability (docs/jepsen-lite.md "Checkers").
import { describeOp, type Op } from './history.js';
import type { FaultRecord } from './faults.js';

/**
 * After a crash of every node (or of a majority that lost its unsynced writes), nothing
 * acknowledged before the crash is gone: the first linearizable read of each lock after
 * the restart shows no token below the highest grant acknowledged before the crash, and
 * no lock whose release was acknowledged is back with that token; no grant after the
 * crash reuses or goes below a token acknowledged before it.
 */
export function checkDurability(ops: readonly Op[], crashes: readonly FaultRecord[]): string[] {
  const violations: string[] = [];
  for (const c of crashes) {
    const before = ops.filter((o) => o.type === 'ok' && o.complete < c.start);
    const maxToken = new Map<string, number>();
    let globalMax = 0;
    const released = new Set<string>();
    for (const o of before) {
      if (o.f === 'acquire' && o.input.lock && o.output.token !== undefined) {
        maxToken.set(o.input.lock, Math.max(maxToken.get(o.input.lock) ?? 0, o.output.token));
        globalMax = Math.max(globalMax, o.output.token);
      }
      if (o.f === 'release' && o.input.lock && o.input.token !== undefined) released.add(`${o.input.lock}#${o.input.token}`);
    }
    const seen = new Set<string>();
    for (const o of ops) {
      if (o.type !== 'ok' || o.invoke < c.end || !o.input.lock) continue;
      if (o.f === 'read' && !seen.has(o.input.lock)) {
        seen.add(o.input.lock);
        const want = maxToken.get(o.input.lock) ?? 0;
        if (o.output.held && o.output.holder_token !== undefined && o.output.holder_token < want) {
          violations.push(`durability (${c.variant} at ${c.start.toFixed(0)}): ${o.input.lock} is held with token ${o.output.holder_token} after the restart, below token ${want} acknowledged before the crash\n    ${describeOp(o)}`);
        }
        if (o.output.held && released.has(`${o.input.lock}#${o.output.holder_token}`)) {
          violations.push(`durability (${c.variant} at ${c.start.toFixed(0)}): ${o.input.lock} is held again with token ${o.output.holder_token}, whose release was acknowledged before the crash\n    ${describeOp(o)}`);
        }
      }
      if (o.f === 'acquire' && o.output.token !== undefined && o.output.token <= globalMax) {
        const sameGrant = before.some((b) => b.f === 'acquire' && b.input.lock === o.input.lock && b.output.token === o.output.token && b.input.session === o.input.session);
        if (!sameGrant) violations.push(`durability (${c.variant} at ${c.start.toFixed(0)}): new grant with token ${o.output.token} after the restart, not above ${globalMax} acknowledged before the crash\n    ${describeOp(o)}`);
      }
    }
  }
  return violations;
}
