// Log time (docs/lock-fsm.md "Log time"): Idempotency-Keys age by the time leaders vouch
// for on their monotonic clocks, so one node's wall clock stepping forward cannot evict
// every key (a retry after a 504 would then run twice).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LogClock } from '../../../src/server/leader/log-clock.js';
import { LockFsm, type Command } from '../../../src/lock-fsm/index.js';

const TEN_MIN = 600_000;

/** one leader: an FSM, its monotonic clock and (for the mutation) its wall clock */
function leader(mutation = false) {
  const fsm = new LockFsm();
  const t = { mono: 5_000, wall: 1_700_000_000_000 };
  const clock = new LogClock({ monoMs: () => t.mono, appliedLogTimeMs: () => fsm.logTimeMs, ...(mutation ? { wallMs: () => t.wall } : {}) });
  clock.takeOffice();
  let index = 0;
  const propose = (cmd: Command, key?: string) => fsm.apply(++index, { atMs: clock.stamp(), cmd, ...(key !== undefined ? { idempotencyKey: key } : {}) });
  return { fsm, t, clock, propose };
}

const OPEN: Command = { kind: 'openSession', sessionId: 's1', ttlMs: 10_000, owner: '', lockDelayMs: 0 };

test('a leader whose wall clock steps 11 minutes forward keeps every Idempotency-Key', () => {
  const L = leader();
  assert.equal(L.propose(OPEN, 'K').result.ok, true);
  L.t.wall += 11 * 60_000; // NTP step, VM resume, operator error
  L.t.mono += 1_000;
  L.propose({ kind: 'barrier', term: 1 });
  const retry = L.propose({ ...OPEN, sessionId: 's2' }, 'K');
  assert.deepEqual(retry.result, { ok: true, kind: 'session_opened', sessionId: 's1', ttlMs: 10_000 }, 'the retry gets the first answer');
  assert.equal(L.fsm.getSession('s2'), undefined, 'and nothing ran twice');
  assert.ok(L.fsm.logTimeMs <= 1_000, `log time advanced by the monotonic second only: ${L.fsm.logTimeMs}`);
});

test('mutation: stamping the wall clock (the old rule) loses the key on the same step', () => {
  const L = leader(true);
  L.propose(OPEN, 'K');
  L.t.wall += 11 * 60_000;
  L.t.mono += 1_000;
  L.propose({ kind: 'barrier', term: 1 });
  const retry = L.propose({ ...OPEN, sessionId: 's2' }, 'K');
  assert.equal(retry.result.ok && retry.result.kind === 'session_opened' && retry.result.sessionId, 's2', 'the retry ran again');
});

test('keys still age out after ten minutes of monotonic time in office', () => {
  const L = leader();
  L.propose(OPEN, 'K');
  for (let k = 0; k < 11; k++) {
    L.t.mono += 60_000;
    L.propose({ kind: 'barrier', term: 1 });
  }
  assert.ok(L.fsm.logTimeMs >= TEN_MIN);
  assert.equal(L.propose({ ...OPEN, sessionId: 's2' }, 'K').result.ok && L.fsm.getSession('s2') !== undefined, true, 'an 11-minute-old key is gone');
});

test('a new leader continues from the applied log time and counts only its own time in office', () => {
  let mono = 0;
  let applied = 50_000;
  const c = new LogClock({ monoMs: () => mono, appliedLogTimeMs: () => applied });
  mono = 1_000_000; // long before taking office: not ours to vouch for
  c.takeOffice();
  assert.equal(c.stamp(), 50_000);
  mono += 250;
  assert.equal(c.stamp(), 50_250);
  applied = 90_000; // an entry a predecessor stamped, applied late
  mono += 10;
  assert.equal(c.stamp(), 90_010, 'catches up with the applied state, adds only its own 10 ms');
  mono -= 5_000; // a monotonic clock never goes back; if one did, time would stand still
  assert.equal(c.stamp(), 90_010);
});

test('one stamp adds at most maxStepMs; many small steps are not lost to rounding', () => {
  let mono = 0;
  const c = new LogClock({ monoMs: () => mono, appliedLogTimeMs: () => 0, maxStepMs: 60_000 });
  c.takeOffice();
  mono += 3_600_000; // a broken monotonic clock (or an hour without a single entry)
  assert.equal(c.stamp(), 60_000);
  for (let k = 0; k < 10_000; k++) {
    mono += 0.1;
    c.stamp();
  }
  assert.equal(c.stamp(), 61_000, '10,000 stamps 0.1 ms apart add one second');
});
