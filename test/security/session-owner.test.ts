// Issue 10 in the lock FSM: a session remembers the principal (API token) that opened it,
// commands from another principal are refused at apply time (permission_denied), the
// per-token session limit and the lock-entry bound hold, and all of it survives a
// snapshot round trip and a decode of the log entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockFsm, assertFsmInvariants, parseCommand, parseApplyResult, type Command } from '../../src/lock-fsm/index.js';
import { Log, decode, encode } from '../lock-fsm/helpers.js';

const open = (sessionId: string, principal?: string): Command => ({ kind: 'openSession', sessionId, ttlMs: 10_000, owner: '', lockDelayMs: 0, ...(principal ? { principal } : {}) });

test('a session opened by one principal cannot be released, closed or used by another', () => {
  const g = new Log();
  assert.equal(g.do(open('s1', 'billing')).ok, true);
  assert.equal(g.do(open('s2', 'payroll')).ok, true);
  assert.equal(g.fsm.getSession('s1')?.principal, 'billing');
  const t = g.do({ kind: 'acquire', name: 'billing/a', sessionId: 's1', waitMs: 0, actor: 'billing' });
  assert.equal(t.ok && t.kind === 'acquired', true);

  // another principal: refused, state untouched
  assert.deepEqual(g.do({ kind: 'release', name: 'billing/a', sessionId: 's1', actor: 'payroll' }), { ok: false, code: 'permission_denied' });
  assert.deepEqual(g.do({ kind: 'closeSession', sessionId: 's1', actor: 'payroll' }), { ok: false, code: 'permission_denied' });
  assert.deepEqual(g.do({ kind: 'acquire', name: 'billing/b', sessionId: 's1', waitMs: 0, actor: 'payroll' }), { ok: false, code: 'permission_denied' });
  assert.equal(g.fsm.getLock('billing/a').holder?.sessionId, 's1');
  assert.deepEqual(g.fsm.getSession('s1')?.locks, ['billing/a']);

  // no actor = an admin (or auth off): allowed
  assert.deepEqual(g.do({ kind: 'release', name: 'billing/a', sessionId: 's1' }), { ok: true, kind: 'released', name: 'billing/a' });
  // the owner itself: allowed
  assert.equal(g.do({ kind: 'closeSession', sessionId: 's1', actor: 'billing' }).ok, true);
  // an unknown session stays session_not_found whatever the actor
  assert.deepEqual(g.do({ kind: 'closeSession', sessionId: 's1', actor: 'payroll' }), { ok: false, code: 'session_not_found' });
  assertFsmInvariants(g.fsm);
});

test('a session opened without a principal (auth off) refuses every named actor', () => {
  const g = new Log();
  g.open('s1');
  g.token('x', 's1');
  assert.deepEqual(g.do({ kind: 'release', name: 'x', sessionId: 's1', actor: 'anyone' }), { ok: false, code: 'permission_denied' });
  assert.equal(g.fsm.getSession('s1')?.principal, undefined);
});

test('max_sessions_per_token counts live sessions per principal; acquire+newSession counts too', () => {
  const g = new Log({ maxSessionsPerPrincipal: 2 });
  assert.equal(g.do(open('a1', 'alice')).ok, true);
  assert.equal(g.do({ kind: 'acquire', name: 'l', sessionId: 'a2', waitMs: 0, newSession: { ttlMs: 1000, owner: '', lockDelayMs: 0, principal: 'alice' } }).ok, true);
  assert.deepEqual(g.do(open('a3', 'alice'), { key: 'k1' }), { ok: false, code: 'too_many_requests', limit: 'sessions_per_token' });
  assert.deepEqual(g.do({ kind: 'acquire', name: 'm', sessionId: 'a4', waitMs: 0, newSession: { ttlMs: 1000, owner: '', lockDelayMs: 0, principal: 'alice' } }), { ok: false, code: 'too_many_requests', limit: 'sessions_per_token' });
  assert.equal(g.do(open('b1', 'bob')).ok, true, 'another principal has its own budget');
  assert.equal(g.do(open('n1')).ok, true, 'sessions without a principal only count toward max_sessions');
  g.do({ kind: 'expireSession', sessionId: 'a2' });
  assert.equal(g.do(open('a3', 'alice'), { key: 'k1' }).ok, true, 'an expired session frees its slot; the refusal was not remembered');
  assertFsmInvariants(g.fsm);
});

test('max_locks bounds lock entries plus queued waits', () => {
  const g = new Log({ maxLocks: 2 });
  g.open('s1');
  g.open('s2');
  g.token('a', 's1');
  assert.equal(g.acquire('a', 's2', 1000).ok, true, 'one entry + one wait = 2');
  assert.deepEqual(g.acquire('b', 's1'), { ok: false, code: 'too_many_requests', limit: 'locks' });
  assert.equal(g.acquire('a', 's1').ok, true, 're-acquiring a held lock needs no room');
  g.do({ kind: 'release', name: 'a', sessionId: 's1' }); // hands over to s2: one entry, no wait
  assert.equal(g.acquire('b', 's1').ok, true);
  assertFsmInvariants(g.fsm);
});

test('principals survive a snapshot; states without principals encode as before', () => {
  const g = new Log({ maxSessionsPerPrincipal: 1 });
  g.do(open('s1', 'billing'));
  g.open('s2');
  const state = g.fsm.snapshot(encode);
  const back = LockFsm.fromSnapshot(state, decode, { maxSessionsPerPrincipal: 1 });
  assert.equal(back.getSession('s1')?.principal, 'billing');
  assert.equal(back.getSession('s2')?.principal, undefined);
  assert.ok(Buffer.from(back.snapshot(encode)).equals(Buffer.from(state)), 'canonical bytes');
  // the per-principal count was rebuilt: the limit still holds after restore
  assert.deepEqual(back.apply(g.index + 1, { atMs: g.atMs, cmd: open('s3', 'billing') }).result, { ok: false, code: 'too_many_requests', limit: 'sessions_per_token' });
  assertFsmInvariants(back);

  const plain = new Log();
  plain.open('s2');
  const rows = (decode(plain.fsm.snapshot(encode)) as { sessions: unknown[][] }).sessions;
  assert.equal(rows[0]?.length, 4, 'no 5th element without a principal');
});

test('decoding refuses malformed principals and actors; new results round-trip', () => {
  assert.throws(() => parseCommand({ ...open('s1'), principal: '' }), /principal/);
  assert.throws(() => parseCommand({ ...open('s1'), principal: 'a b' }), /principal/);
  assert.throws(() => parseCommand({ kind: 'release', name: 'x', sessionId: 's', actor: 7 }), /actor/);
  assert.throws(() => parseCommand({ kind: 'acquire', name: 'x', sessionId: 's', waitMs: 0, actor: 'a', newSession: { ttlMs: 1, owner: '', lockDelayMs: 0 } }), /actor/);
  assert.deepEqual(parseCommand({ kind: 'closeSession', sessionId: 's', actor: 'ops' }), { kind: 'closeSession', sessionId: 's', actor: 'ops' });
  assert.deepEqual(parseApplyResult({ ok: false, code: 'permission_denied' }), { ok: false, code: 'permission_denied' });
  assert.deepEqual(parseApplyResult({ ok: false, code: 'too_many_requests', limit: 'sessions_per_token' }), { ok: false, code: 'too_many_requests', limit: 'sessions_per_token' });
  assert.throws(() => parseApplyResult({ ok: false, code: 'too_many_requests', limit: 'bogus' }), /limit/);
});
