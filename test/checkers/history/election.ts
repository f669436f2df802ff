// The election checker (docs/jepsen-lite.md "Checkers" 10): at most one leader per
// fencing epoch, at the service and at the fenced resource the leaders write.
//
// Leaderships are grants (checkers.ts knownGrants 'election': a campaign's answer, or a
// read naming the leader), held — as far as the history can prove — from their proof
// until the first of: the session's lease may lapse (send time of an acknowledged
// campaign or keepalive + TTL), the holder let go (a resign, its session's close), a
// revocation that can have hit it was sent (the nemesis's `revoke`, of its session or of
// every grant of the name, sent before anything proves it had no effect), or its max
// hold ran out (the campaign's send time + max_hold_ms: log time never runs faster than
// real time, docs/contract.md §4 "Revocation and maximum hold"). The checks:
// - service: a leadership granted to another session while an earlier one was still
//   held is two leaders at once;
// - reads: a linearizable read never names a leader older than one already granted;
// - resource (the fenced register of the election's name, resource-proc.ts): the tokens
//   it accepts never go back (a deposed leader's write after a newer token), one token's
//   accepted writes come from one writer, and that writer is the session the service
//   gave the token to; no lost update.
// Tokens increasing across every kind of grant is checkTokenOrder's (checkers.ts).
import { describeOp, type Op } from './history.js';
import { grantWindows, knownGrants, type Grant, type Ttl } from './grants.js';
import type { ResourceLogEntry } from './resource-logs.js';
import { isElection } from './names.js';

export interface ElectionReport {
  /** leaderships known (campaign answers and reads) */
  grants: number;
  /** distinct sessions that led */
  leaders: number;
  /** campaigns, and those asked with max_hold_ms */
  campaigns: number;
  maxHoldCampaigns: number;
  /** revocations the nemesis sent, and the leaderships they took away */
  revokes: number;
  revoked: number;
  /** the leaders' writes at the resource: accepted, and refused as stale */
  writes: number;
  rejected: number;
  violations: string[];
}

const short = (s: string): string => s.slice(0, 8);
const at = (t: number): string => (Number.isFinite(t) ? t.toFixed(1) : '∞');

export function checkElections(ops: readonly Op[], log: readonly ResourceLogEntry[], ttl: Ttl, fencing: boolean): ElectionReport {
  const violations: string[] = [];
  const grants = knownGrants(ops, 'election').filter((g) => isElection(g.lock));
  const win = grantWindows(ops, ttl, 'election');
  const revokes = ops.filter((o) => o.f === 'revoke' && o.input.lock !== undefined && isElection(o.input.lock));
  const campaigns = ops.filter((o) => o.f === 'campaign' && o.input.lock !== undefined && isElection(o.input.lock));

  // a leadership also ends at a revocation or its max hold (grantWindows.endedBy)
  const end = (g: Grant): number => win.end(g);

  // ---- the service: one leader at a time
  const byName = new Map<string, Grant[]>();
  for (const g of grants) byName.set(g.lock, [...(byName.get(g.lock) ?? []), g]);
  for (const [name, gs] of byName) {
    gs.sort((a, b) => a.token - b.token);
    const ends = gs.map(end);
    for (let j = 1; j < gs.length; j++) {
      const g2 = gs[j]!;
      for (let i = 0; i < j; i++) {
        const g1 = gs[i]!;
        if (g1.session === g2.session || !(g2.complete < ends[i]!)) continue;
        violations.push(
          `election: ${name} elected ${short(g2.session)} (token ${g2.token}) by t=${at(g2.complete)} while ${short(g1.session)} (token ${g1.token}) still led, safely until ${at(ends[i]!)}: two leaders` +
            `\n    ${describeOp(g1.op)}\n    ${describeOp(g2.op)}`,
        );
        break; // one report per later leadership
      }
    }
  }

  // ---- reads: never a leader older than one already elected
  for (const o of ops) {
    if (o.f !== 'el-read' || o.type !== 'ok' || !o.input.lock || o.output.holder_token === undefined) continue;
    const newer = (byName.get(o.input.lock) ?? []).find((g) => g.token > o.output.holder_token! && g.complete < o.invoke);
    if (newer) violations.push(`election: a read of ${o.input.lock} names leader token ${o.output.holder_token} after token ${newer.token} had been elected (a stale read)\n    ${describeOp(newer.op)}\n    ${describeOp(o)}`);
  }

  // ---- the resource
  const tokenOwner = new Map<string, string>();
  for (const g of grants) tokenOwner.set(`${g.lock}#${g.token}`, g.session);
  const highest = new Map<string, { token: number; seq: number }>();
  const writerOf = new Map<string, { writer: string; seq: number }>();
  let writes = 0;
  let rejected = 0;
  for (const e of [...log].sort((a, b) => a.seq - b.seq)) {
    if (!isElection(e.lock)) continue;
    if (e.op === 'write') writes++;
    if (!e.accepted) {
      rejected++;
      continue;
    }
    const h = highest.get(e.lock);
    if (fencing && h !== undefined && e.token < h.token) {
      violations.push(`election fencing: the resource accepted a ${e.op} on ${e.lock} with token ${e.token} (entry ${e.seq}${e.writer ? `, from ${short(e.writer)}` : ''}) after token ${h.token} (entry ${h.seq}): a deposed leader acted after a newer one`);
    }
    if (h === undefined || e.token > h.token) highest.set(e.lock, { token: e.token, seq: e.seq });
    if (e.op !== 'write') continue;
    if (fencing && e.lost) violations.push(`election: lost update on ${e.lock}: the write of ${e.value} with token ${e.token} was based on ${e.read}, but the register held ${e.before} (entry ${e.seq})`);
    if (e.writer === undefined) continue;
    const k = `${e.lock}#${e.token}`;
    const w = writerOf.get(k);
    if (w === undefined) writerOf.set(k, { writer: e.writer, seq: e.seq });
    else if (w.writer !== e.writer) violations.push(`election: the resource accepted writes on ${e.lock} under token ${e.token} from two campaigners, ${short(w.writer)} (entry ${w.seq}) and ${short(e.writer)} (entry ${e.seq})`);
    const owner = tokenOwner.get(k);
    if (owner !== undefined && owner !== e.writer) violations.push(`election: the resource accepted a write on ${e.lock} under token ${e.token} from ${short(e.writer)}, but that token is ${short(owner)}'s leadership (entry ${e.seq})`);
  }

  const revokedGrants = revokes.filter((r) => r.type === 'ok').reduce((n, r) => n + (r.output.revoked?.length ?? 0), 0);
  return {
    grants: grants.length,
    leaders: new Set(grants.map((g) => g.session)).size,
    campaigns: campaigns.length,
    maxHoldCampaigns: campaigns.filter((c) => c.input.max_hold_ms !== undefined).length,
    revokes: revokes.length,
    revoked: revokedGrants,
    writes,
    rejected,
    violations,
  };
}
