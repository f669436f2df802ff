// The lessor against a fake clock: never early, within one tick late, resets on
// promotion, silent on followers, retries until it sees the result applied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Lessor, LockFsm, type Command, type FsmEvent } from '../../src/lock-fsm/index.js';
import { seededRng } from '../../src/raft/core/rng.js';
import { Log } from './helpers.js';
import { testSeed } from '../support/seed.js';

const TICK = 100;

/** A leader in a box: FSM + lessor + fake clock; due commands are applied at once. */
class Leader {
  readonly g = new Log();
  readonly lessor = new Lessor({ tickMs: TICK, retryMs: 1000 });
  now = 0;
  proposed: { at: number; cmd: Command }[] = [];
  constructor() {
    this.lessor.promote(this.now, this.g.fsm);
  }
  apply(cmd: Command): FsmEvent[] {
    const out = this.g.run(cmd, { atMs: this.now });
    this.lessor.observe(out.events, this.now, this.g.fsm);
    return out.events;
  }
  tick(): Command[] {
    this.now += TICK;
    const cmds = this.lessor.due(this.now);
    for (const cmd of cmds) {
      this.proposed.push({ at: this.now, cmd });
      this.apply(cmd);
    }
    return cmds;
  }
}

test('sessions never expire early and expire within one tick of their deadline (random renewals)', () => {
  const seed = testSeed('LESSOR_SEED', { what: 'lessor renewals', replay: 'node --test dist/test/lock-fsm/lessor.test.js' });
  const rng = seededRng(seed);
  const L = new Leader();
  const lastRenew = new Map<string, number>();
  const ttl = new Map<string, number>();
  for (let i = 0; i < 40; i++) {
    const t = rng.int(5, 40) * 100 + rng.int(0, 100);
    L.apply({ kind: 'openSession', sessionId: `s${i}`, ttlMs: t, owner: '', lockDelayMs: 0 });
    lastRenew.set(`s${i}`, L.now);
    ttl.set(`s${i}`, t);
  }
  for (let step = 0; step < 600; step++) {
    for (const cmd of L.tick()) {
      assert.equal(cmd.kind, 'expireSession');
      const id = (cmd as { sessionId: string }).sessionId;
      const deadline = (lastRenew.get(id) as number) + (ttl.get(id) as number);
      assert.ok(L.now >= deadline, `${id} expired at ${L.now}, before its deadline ${deadline}`);
      assert.ok(L.now < deadline + TICK, `${id} expired at ${L.now}, more than a tick after ${deadline}`);
      lastRenew.delete(id);
    }
    for (const id of lastRenew.keys()) {
      if (rng.next() < 0.08) {
        // a keepalive that was sent a little while before it arrived
        const sentAt = L.now - rng.int(0, 50);
        assert.equal(L.lessor.renew(id, sentAt), true);
        lastRenew.set(id, Math.max(lastRenew.get(id) as number, sentAt));
      }
    }
  }
  assert.ok(L.proposed.length > 10, 'some sessions expired');
  assert.equal(L.proposed.length + lastRenew.size, 40);
  assert.equal(L.g.fsm.counts().sessions, lastRenew.size);
});

test('a due command is proposed once, then again every retryMs until it is seen applied', () => {
  const lessor = new Lessor({ tickMs: TICK, retryMs: 1000 });
  const fsm = new LockFsm();
  lessor.promote(0, fsm);
  lessor.observe([{ type: 'sessionOpened', sessionId: 's1', ttlMs: 500 }], 0);
  assert.deepEqual(lessor.due(499), []);
  assert.deepEqual(lessor.due(500), [{ kind: 'expireSession', sessionId: 's1' }]);
  assert.deepEqual(lessor.due(600), [], 'not twice while in flight');
  assert.equal(lessor.renew('s1', 600), false, 'no renewal once the expiry is proposed');
  assert.deepEqual(lessor.due(1499), []);
  assert.deepEqual(lessor.due(1500), [{ kind: 'expireSession', sessionId: 's1' }], 'retried: the proposal may have been dropped');
  lessor.observe([{ type: 'sessionEnded', sessionId: 's1', reason: 'expired', released: [] }], 1600);
  assert.deepEqual(lessor.due(100_000), []);
  assert.deepEqual(lessor.counts(), { sessions: 0, delays: 0, waits: 0 });
});

test('renew extends (never shortens) the deadline; unknown sessions are refused', () => {
  const lessor = new Lessor({ tickMs: TICK });
  lessor.promote(0, new LockFsm());
  lessor.observe([{ type: 'sessionOpened', sessionId: 's1', ttlMs: 1000 }], 0);
  assert.equal(lessor.renew('s1', 800), true);
  assert.equal(lessor.deadlineOf('s1'), 1800);
  assert.equal(lessor.renew('s1', 100), true, 'a late-arriving old keepalive');
  assert.equal(lessor.deadlineOf('s1'), 1800, 'does not shorten');
  assert.equal(lessor.renew('ghost', 100), false);
  assert.deepEqual(lessor.due(1799), []);
  assert.deepEqual(lessor.due(1800), [{ kind: 'expireSession', sessionId: 's1' }]);
});

test('promote gives every session a full TTL from now, re-arms lock-delays with their full durations, and waits with what log time left of them (all of it here)', () => {
  const g = new Log();
  g.open('s1', { ttlMs: 1000, lockDelayMs: 3000 });
  g.open('s2', { ttlMs: 5000 });
  g.open('s3', { ttlMs: 9000 });
  g.token('a', 's1');
  g.token('b', 's2');
  g.acquire('b', 's3', 2000);
  g.acquire('a', 's3', 7000);
  g.do({ kind: 'expireSession', sessionId: 's1' });
  const lessor = new Lessor({ tickMs: TICK, retryMs: 60_000 });
  lessor.promote(10_000, g.fsm);
  // each command names the wait or delay it ends by the index that began it
  const waitB = g.fsm.waitOf('b', 's3')!.since, waitA = g.fsm.waitOf('a', 's3')!.since, delayA = g.fsm.locksInDelay()[0]!.since;
  assert.ok(waitB > 0 && waitA > waitB && delayA > waitA);
  assert.equal(lessor.deadlineOf('s2'), 15_000);
  assert.equal(lessor.deadlineOf('s3'), 19_000);
  assert.deepEqual(lessor.due(11_999), []);
  assert.deepEqual(lessor.due(12_000), [{ kind: 'cancelWait', name: 'b', sessionId: 's3', since: waitB }]);
  assert.deepEqual(lessor.due(13_000), [{ kind: 'endLockDelay', name: 'a', since: delayA }]);
  assert.deepEqual(lessor.due(17_000), [{ kind: 'expireSession', sessionId: 's2' }, { kind: 'cancelWait', name: 'a', sessionId: 's3', since: waitA }]);
  // a leader change resets even a session whose old deadline was close
  lessor.demote();
  lessor.promote(20_000, g.fsm);
  assert.equal(lessor.deadlineOf('s2'), 25_000);
  assert.deepEqual(lessor.due(24_999).filter((c) => c.kind === 'expireSession'), []);
});

test('a follower tracks nothing and proposes nothing', () => {
  const lessor = new Lessor({ tickMs: TICK });
  assert.equal(lessor.isLeader, false);
  lessor.observe([{ type: 'sessionOpened', sessionId: 's1', ttlMs: 10 }], 0);
  lessor.trackWait('a', 's1', 5, 1);
  assert.deepEqual(lessor.due(1e9), []);
  assert.equal(lessor.renew('s1', 0), false);
  lessor.promote(0, new LockFsm());
  lessor.observe([{ type: 'sessionOpened', sessionId: 's1', ttlMs: 10 }], 0);
  lessor.demote();
  assert.deepEqual(lessor.due(1e9), [], 'demote forgets everything');
  assert.equal(lessor.renew('s1', 0), false);
  assert.deepEqual(lessor.counts(), { sessions: 0, delays: 0, waits: 0 });
});

test('lock-delay and wait tracking follow the FSM events', () => {
  const L = new Leader();
  L.apply({ kind: 'openSession', sessionId: 'h', ttlMs: 1000, owner: '', lockDelayMs: 2000 });
  L.apply({ kind: 'openSession', sessionId: 'w', ttlMs: 100_000, owner: '', lockDelayMs: 0 });
  L.apply({ kind: 'acquire', name: 'a', sessionId: 'h', waitMs: 0 });
  L.apply({ kind: 'acquire', name: 'a', sessionId: 'w', waitMs: 60_000 });
  L.lessor.trackWait('a', 'w', L.now + 60_000, L.g.fsm.waitOf('a', 'w')!.since);
  while (L.g.fsm.getLock('a').holder?.sessionId !== 'w') L.tick();
  // h expired at 1000, then a was in lock-delay for 2000 more
  assert.deepEqual(L.proposed.map((p) => [p.at, p.cmd.kind]), [[1000, 'expireSession'], [3000, 'endLockDelay']]);
  assert.deepEqual(L.lessor.counts(), { sessions: 1, delays: 0, waits: 0 }, 'the grant ended the wait');
  for (let i = 0; i < 700; i++) L.tick();
  assert.equal(L.proposed.length, 2, 'no cancelWait for a wait that was granted');
});

test('a cancel is proposed again every retryMs until its wait ends, however long; a wait that ended unseen is dropped unproposed', () => {
  const g = new Log();
  g.open('h');
  g.open('w');
  g.token('a', 'h');
  g.acquire('a', 'w', 100);
  const since = g.fsm.waitOf('a', 'w')!.since;
  const lessor = new Lessor({ tickMs: TICK, retryMs: 1000 });
  lessor.promote(0, g.fsm);
  const live = (t: 'lock' | 'semaphore', name: string, sid: string, at: number): boolean => g.fsm.waitStands(t, name, sid, at);
  const sent: Command[] = [];
  // every copy is lost (a slow log, leader changes): the cancel never stops being proposed
  for (let t = 0; t <= 60_000; t += TICK) sent.push(...lessor.due(t, undefined, live).filter((c) => c.kind !== 'expireSession'));
  assert.equal(sent.length, 60);
  assert.ok(sent.every((c) => c.kind === 'cancelWait' && c.since === since));
  // the wait ends without an event this lessor saw (granted before it took office, say)
  g.do({ kind: 'release', name: 'a', sessionId: 'h' });
  assert.equal(g.fsm.getLock('a').holder?.sessionId, 'w');
  assert.deepEqual(lessor.due(61_000, undefined, live).filter((c) => c.kind !== 'expireSession'), []);
  assert.equal(lessor.counts().waits, 0);
  // without the FSM to ask, only an apply ends it: the cancel is repeated
  const blind = new Lessor({ tickMs: TICK, retryMs: 1000 });
  blind.promote(0, new LockFsm());
  blind.trackWait('a', 's1', 100, 7);
  const again = [];
  for (let t = 0; t <= 20_000; t += TICK) again.push(...blind.due(t));
  assert.equal(again.length, 20);
  assert.equal(blind.counts().waits, 1);
});

test('the testLegacyWaitTracking mutation restores the old lessor: no wait learned from the log, full re-arm on promotion, a cancel given up after three tries', () => {
  const lessor = new Lessor({ tickMs: TICK, retryMs: 1000, testLegacyWaitTracking: true });
  lessor.promote(0, new LockFsm());
  lessor.trackWait('a', 's1', 100, 7);
  const sent = [];
  for (let t = 0; t <= 20_000; t += TICK) sent.push(...lessor.due(t, undefined, () => true));
  assert.equal(sent.length, 3);
  assert.equal(lessor.counts().waits, 0);
  const g = new Log();
  g.open('h');
  g.open('w');
  g.token('a', 'h');
  const out = g.run({ kind: 'acquire', name: 'a', sessionId: 'w', waitMs: 1000 });
  const legacy = new Lessor({ tickMs: TICK, testLegacyWaitTracking: true });
  legacy.promote(0, new LockFsm());
  legacy.observe(out.events, 0, g.fsm);
  assert.equal(legacy.counts().waits, 0, 'the wait the log queued is not tracked');
  g.run({ kind: 'openSession', sessionId: 'x', ttlMs: 10_000, owner: '', lockDelayMs: 0 }, { atMs: g.atMs + 900 });
  legacy.promote(5000, g.fsm);
  assert.deepEqual(legacy.due(5999), [], 'promotion re-arms the full wait_ms, whatever log time passed');
});

test('a wait committed under this leader, proposed by another, is learned from the log and cancelled wait_ms after its apply', () => {
  const L = new Leader();
  L.apply({ kind: 'openSession', sessionId: 'h', ttlMs: 1_000_000, owner: '', lockDelayMs: 0 });
  L.apply({ kind: 'openSession', sessionId: 'w', ttlMs: 1_000_000, owner: '', lockDelayMs: 0 });
  L.apply({ kind: 'acquire', name: 'a', sessionId: 'h', waitMs: 0 });
  // the entry a deposed leader proposed commits here; no API request waits on this node
  L.apply({ kind: 'acquire', name: 'a', sessionId: 'w', waitMs: 1000 });
  L.apply({ kind: 'semAcquire', name: 's', sessionId: 'h', limit: 1, permits: 1, waitMs: 0 });
  L.apply({ kind: 'semAcquire', name: 's', sessionId: 'w', limit: 1, permits: 1, waitMs: 1500 });
  L.apply({ kind: 'campaign', name: 'e', sessionId: 'h', value: 'vh', waitMs: 0 });
  L.apply({ kind: 'campaign', name: 'e', sessionId: 'w', value: 'vw', waitMs: 2000 });
  assert.equal(L.lessor.counts().waits, 3);
  while (L.now < 3000) L.tick();
  assert.deepEqual(L.proposed.map((p) => [p.at, p.cmd.kind, 'name' in p.cmd ? p.cmd.name : '']), [[1000, 'cancelWait', 'a'], [1500, 'semCancelWait', 's'], [2000, 'cancelWait', 'e']]);
  assert.equal(L.lessor.counts().waits, 0);
  // so a later release does not hand the lock to the session that stopped waiting
  L.apply({ kind: 'release', name: 'a', sessionId: 'h' });
  assert.equal(L.g.fsm.getLock('a').holder, undefined);
  // the API layer's own deadline (the request's arrival + wait_ms) replaces the log's bound
  L.apply({ kind: 'acquire', name: 'a', sessionId: 'h', waitMs: 0 });
  L.apply({ kind: 'acquire', name: 'a', sessionId: 'w', waitMs: 1000 });
  const since = L.g.fsm.waitOf('a', 'w')!.since;
  L.lessor.trackWait('a', 'w', L.now + 400, since, false, L.now - 600); // it arrived 600 ms before it applied
  L.lessor.trackWait('a', 'w', L.now + 300, since, false, L.now - 700); // a request with an earlier deadline does not shorten it
  const from = L.proposed.length;
  for (let k = 0; k < 10; k++) L.tick();
  assert.deepEqual(L.proposed.slice(from).map((p) => [p.at - 3000, p.cmd.kind]), [[400, 'cancelWait']]);
  // a later request of the session that finds the wait (here with wait_ms 0) never cuts it
  // short: the wait keeps its own wait_ms from the arrival of the request that queued it
  L.apply({ kind: 'acquire', name: 'a', sessionId: 'w', waitMs: 1000 });
  const queued = L.now;
  const again = L.g.fsm.waitOf('a', 'w')!.since;
  L.tick();
  L.tick();
  L.lessor.trackWait('a', 'w', L.now + 0, again, false, L.now); // 200 ms after it queued; it asks for 0 ms
  const mark = L.proposed.length;
  for (let k = 0; k < 12; k++) L.tick();
  assert.deepEqual(L.proposed.slice(mark).map((p) => [p.at - queued, p.cmd.kind]), [[1000, 'cancelWait']]);
  // and one asking for more extends it
  L.apply({ kind: 'acquire', name: 'a', sessionId: 'w', waitMs: 1000 });
  const third = L.g.fsm.waitOf('a', 'w')!.since;
  L.lessor.trackWait('a', 'w', L.now + 1000, third, false, L.now);
  L.tick();
  const asked = L.now;
  L.lessor.trackWait('a', 'w', asked + 3000, third, false, asked);
  const m3 = L.proposed.length;
  for (let k = 0; k < 40; k++) L.tick();
  assert.deepEqual(L.proposed.slice(m3).map((p) => [p.at - asked, p.cmd.kind]), [[3000, 'cancelWait']]);
});

test('a new leader arms each wait with what log time left of it, so leader changes never restart a wait', () => {
  const g = new Log();
  const t0 = g.atMs;
  g.open('h');
  g.open('w');
  g.token('a', 'h');
  g.acquire('a', 'w', 5000); // queued at log time t0
  // 3 s of log time pass under the first leader
  g.run({ kind: 'openSession', sessionId: 'x', ttlMs: 10_000, owner: '', lockDelayMs: 0 }, { atMs: t0 + 3000 });
  const second = new Lessor({ tickMs: TICK });
  second.promote(100_000, g.fsm);
  assert.deepEqual(second.due(101_999), []);
  assert.deepEqual(second.due(102_000).map((c) => c.kind), ['cancelWait']);
  // its cancel is lost; the third leader took office after 1.5 s more of log time
  g.run({ kind: 'openSession', sessionId: 'y', ttlMs: 10_000, owner: '', lockDelayMs: 0 }, { atMs: t0 + 4500 });
  const third = new Lessor({ tickMs: TICK });
  third.promote(200_000, g.fsm);
  assert.deepEqual(third.due(200_499), []);
  assert.deepEqual(third.due(200_500).map((c) => c.kind), ['cancelWait']);
  // once log time is past queuedAtMs + wait_ms, the next leader cancels at once
  g.run({ kind: 'openSession', sessionId: 'z', ttlMs: 10_000, owner: '', lockDelayMs: 0 }, { atMs: t0 + 9000 });
  const fourth = new Lessor({ tickMs: TICK });
  fourth.promote(300_000, g.fsm);
  assert.deepEqual(fourth.due(300_000).map((c) => c.kind), ['cancelWait']);
});
