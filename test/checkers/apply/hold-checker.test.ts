// The max-hold and revoke checker of the lock simulation fires on the streams and states
// it exists to reject (docs/simulation-lock.md "Revocation and maximum hold"), beside good
// ones that pass. The streams are a real LockFsm's outputs; the times (stamps, deadlines,
// the real time of each apply) are made up to be early or late.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HoldShadow } from './hold-checker.js';
import { LockFsm, type ApplyOutput, type Command } from '../../../src/lock-fsm/index.js';
import { fail, fires } from './fired.js';


/** a LockFsm fed index by index, every entry stamped at log time = its real time */
class Stream {
  index = 0;
  readonly fsm: LockFsm;
  constructor(readonly shadow: HoldShadow, ignoreToken = false) {
    this.fsm = new LockFsm(ignoreToken ? { testExpireHoldIgnoresToken: true } : {});
  }
  apply(cmd: Command, realMs: number, stampedBy = 'n1/1'): ApplyOutput {
    const i = ++this.index;
    const out = this.fsm.apply(i, { atMs: realMs, cmd });
    const [node, term] = stampedBy.split('/');
    this.shadow.onApplied(i, cmd, realMs, { node: node!, term: Number(term), realMs }, out, this.fsm, realMs);
    return out;
  }
}

const open = (sessionId: string): Command => ({ kind: 'openSession', sessionId, ttlMs: 60_000, owner: sessionId, lockDelayMs: 0 });
const acquire = (sessionId: string, maxHoldMs?: number): Command => ({ kind: 'acquire', name: 'L', sessionId, waitMs: 0, ...(maxHoldMs !== undefined ? { maxHoldMs } : {}) });
const expire = (sessionId: string, fencingToken: number): Command => ({ kind: 'expireHold', target: 'lock', name: 'L', sessionId, fencingToken });
function tokenOf(out: ApplyOutput): number {
  const r = out.result;
  assert.ok(r.ok && r.kind === 'acquired');
  return r.fencingToken;
}

test('an expiry at grant + max hold passes; an earlier one fires MaxHoldEarly', () => {
  const ok = new Stream(new HoldShadow(fail, 10));
  ok.apply(open('a'), 100);
  const t = tokenOf(ok.apply(acquire('a', 500), 1000));
  ok.apply(expire('a', t), 1500);
  assert.equal(ok.shadow.counts.holdsGranted, 1);
  assert.equal(ok.shadow.counts.holdExpiries, 1);
  const early = new Stream(new HoldShadow(fail, 10));
  early.apply(open('a'), 100);
  const t2 = tokenOf(early.apply(acquire('a', 500), 1000));
  fires('MaxHoldEarly', () => early.apply(expire('a', t2), 1499));
});

test('a stale expireHold ending a later grant (the testExpireHoldIgnoresToken mutation) fires MaxHoldEarly', () => {
  // the later grant has no max hold
  const s = new Stream(new HoldShadow(fail, 10), true);
  s.apply(open('a'), 100);
  const t1 = tokenOf(s.apply(acquire('a', 500), 1000));
  s.apply({ kind: 'release', name: 'L', sessionId: 'a', fencingToken: t1 }, 1100);
  s.apply(acquire('a'), 1200);
  fires('MaxHoldEarly', () => s.apply(expire('a', t1), 2000));
  // the later grant has one of its own: the expiry names the wrong token
  const w = new Stream(new HoldShadow(fail, 10), true);
  w.apply(open('a'), 100);
  const u1 = tokenOf(w.apply(acquire('a', 500), 1000));
  w.apply({ kind: 'release', name: 'L', sessionId: 'a', fencingToken: u1 }, 1100);
  w.apply(acquire('a', 300), 1200);
  fires('MaxHoldEarly', () => w.apply(expire('a', u1), 5000));
  // with the fix the stale copy is a no-op, and nothing fires
  const fixed = new Stream(new HoldShadow(fail, 10));
  fixed.apply(open('a'), 100);
  const v1 = tokenOf(fixed.apply(acquire('a', 500), 1000));
  fixed.apply({ kind: 'release', name: 'L', sessionId: 'a', fencingToken: v1 }, 1100);
  fixed.apply(acquire('a'), 1200);
  assert.deepEqual(fixed.apply(expire('a', v1), 2000).events, []);
});

test("a hold still standing after its leader stamped an entry past the deadline fires MaxHoldBound; another leader's entry, or an excused one, does not", () => {
  const run = (excused: boolean, stampedBy: string): void => {
    const s = new Stream(new HoldShadow(fail, 10));
    s.apply(open('a'), 100);
    s.apply(open('b'), 100);
    const t = tokenOf(s.apply(acquire('a', 500), 1000));
    // n1 applied the grant while leading at 1000: its deadline is 1500
    s.shadow.onTracked('n1/1', s.fsm, 1000, [t]);
    if (excused) s.shadow.excuse(t, 'n1/1');
    s.apply({ kind: 'acquire', name: 'M', sessionId: 'b', waitMs: 0 }, 1505, stampedBy); // within the tick
    s.apply({ kind: 'acquire', name: 'N', sessionId: 'b', waitMs: 0 }, 1600, stampedBy);
  };
  fires('MaxHoldBound', () => run(false, 'n1/1'));
  run(false, 'n2/2'); // a leader that never tracked it
  run(true, 'n1/1');
  // a leader that took office after the grant arms the rest in log time
  const s = new Stream(new HoldShadow(fail, 10));
  s.apply(open('a'), 100);
  const t = tokenOf(s.apply(acquire('a', 500), 1000));
  s.apply(open('b'), 1200); // log time 1200: 300 ms of the hold are left
  s.shadow.onTracked('n2/2', s.fsm, 5000);
  s.apply(open('c'), 5305, 'n2/2');
  fires('MaxHoldBound', () => s.apply(open('d'), 5320, 'n2/2'));
  assert.ok(s.fsm.holdsGrant('lock', 'L', 'a', t), 'the grant stood throughout');
});

test('a grant that survives its revoke on some node fires Revoked', () => {
  const shadow = new HoldShadow(fail, 10);
  const first = new Stream(shadow);
  const lagging = new LockFsm({});
  const cmds: Command[] = [open('a'), open('b'), acquire('a', 500), { kind: 'acquire', name: 'L', sessionId: 'b', waitMs: 1000 }];
  for (const c of cmds) {
    lagging.apply(first.index + 1, { atMs: 1000, cmd: c });
    first.apply(c, 1000);
  }
  const rv: Command = { kind: 'revoke', target: 'lock', name: 'L' };
  const out = first.apply(rv, 1100);
  // the waiter got the lock in the same apply, with a larger token
  assert.ok(out.events.some((e) => e.type === 'granted' && e.sessionId === 'b'));
  shadow.checkNode(first.fsm, first.index, 'first');
  // a node whose entry at that index did not revoke (as a broken replica would)
  lagging.apply(first.index, { atMs: 1100, cmd: { kind: 'barrier', term: 1 } });
  fires('Revoked', () => shadow.checkNode(lagging, first.index, 'lagging'));
  assert.equal(shadow.counts.revokesApplied, 1);
});
