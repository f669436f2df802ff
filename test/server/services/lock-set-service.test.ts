// Lock sets, deadlocks and contention through the node's service (docs/contract.md §5): the
// answers a client gets — a set granted at once or after its wait, as one grant; 409
// lock_held with `blocked` when the wait runs out; 409 deadlock with the cycle for the
// per-name acquire that closes one; raftlock_deadlocks_total; keepalive grants with waiters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../../src/api/errors.js';
import { codeOf, errorOf, setup, valueOf } from './service-fixture.js';

test('acquire-all: granted at once in the request order, or after the wait as one grant; release-all', async () => {
  const { svc, app, ctx } = setup();
  const { session_id: a } = valueOf(await svc.openSession({}, ctx()));
  const { session_id: b } = valueOf(await svc.openSession({}, ctx()));
  const g = valueOf(await svc.lockSets.acquireAll(['y', 'x'], { sessionId: a, waitMs: 0 }, ctx()));
  assert.deepEqual(g.grants.map((x) => x.name), ['y', 'x']);
  for (const x of g.grants) assert.equal(app.fsm.check(x.name, x.fencing_token), true);
  // b waits for both; a gives them back: b gets the set, tokens above a's
  const waiting = svc.lockSets.acquireAll(['x', 'y', 'z'], { sessionId: b, waitMs: 10_000 }, ctx('set-b'));
  await new Promise((r) => setImmediate(r));
  assert.equal(app.fsm.getLock('z').waiters, 1, 'z is free but holds a place for the set');
  assert.deepEqual(valueOf(await svc.lockSets.releaseAll(['x', 'y'], a, ctx())), { released: ['x', 'y'] });
  const got = valueOf(await waiting);
  assert.equal(got.session_id, b);
  assert.deepEqual(got.grants.map((x) => x.name), ['x', 'y', 'z']);
  const top = Math.max(...g.grants.map((x) => x.fencing_token));
  for (const x of got.grants) assert.ok(x.fencing_token > top);
  // a retry with the same key answers the same grant
  assert.deepEqual(valueOf(await svc.lockSets.acquireAll(['x', 'y', 'z'], { sessionId: b, waitMs: 10_000 }, ctx('set-b'))), got);
  assert.deepEqual((valueOf(await svc.getSession(b, ctx()))).locks, ['x', 'y', 'z']);
  // the key is bound to that set (docs/api.md "Idempotency"): another set, another order,
  // another mode or a single acquire with it is refused, and nothing changes
  for (const other of [
    svc.lockSets.acquireAll(['x', 'y'], { sessionId: b, waitMs: 0 }, ctx('set-b')),
    svc.lockSets.acquireAll(['z', 'y', 'x'], { sessionId: b, waitMs: 0 }, ctx('set-b')),
    svc.lockSets.acquireAll(['x', 'y', 'z'], { sessionId: b, waitMs: 0, mode: 'shared' }, ctx('set-b')),
    svc.acquire('x', { sessionId: b, waitMs: 0 }, ctx('set-b')),
    svc.lockSets.releaseAll(['x', 'y', 'z'], b, ctx('set-b')),
  ]) assert.equal((await errorOf(other)).code, 'idempotency_key_reused');
  assert.deepEqual((valueOf(await svc.getSession(b, ctx()))).locks, ['x', 'y', 'z']);
});

test('acquire-all: wait 0 or a wait that runs out answers 409 lock_held with blocked; nothing is left queued', async () => {
  const { svc, app, ctx, tick } = setup();
  const { session_id: a } = valueOf(await svc.openSession({ ttlMs: 60_000 }, ctx()));
  const { session_id: b } = valueOf(await svc.openSession({ ttlMs: 60_000 }, ctx()));
  const held = valueOf(await svc.acquire('accounts/2', { sessionId: a, waitMs: 0 }, ctx()));
  const e = await errorOf(svc.lockSets.acquireAll(['accounts/1', 'accounts/2'], { sessionId: b, waitMs: 0 }, ctx()));
  assert.equal(e.code, 'lock_held');
  assert.deepEqual(e.details?.['blocked'], [{ name: 'accounts/2', holder: { session_id: a, owner: '', fencing_token: held.fencing_token } }]);
  const waiting = errorOf(svc.lockSets.acquireAll(['accounts/1', 'accounts/2'], { sessionId: b, waitMs: 500 }, ctx()));
  await new Promise((r) => setImmediate(r));
  for (let t = 0; t < 700; t += 100) {
    tick(100);
    svc.onTick();
    await new Promise((r) => setImmediate(r));
  }
  const late = await waiting;
  assert.equal(late.code, 'lock_held');
  assert.deepEqual((late.details?.['blocked'] as { name: string }[]).map((x) => x.name), ['accounts/1', 'accounts/2']);
  assert.equal(app.fsm.getLock('accounts/1').waiters, 0, 'the set\'s wait ended as a whole');
  assert.equal(app.fsm.getLock('accounts/2').waiters, 0);
});

test('per-name acquires in opposite order: the second wait gets 409 deadlock at once with the cycle; the metric counts it', async () => {
  const { svc, ctx } = setup();
  const { session_id: a } = valueOf(await svc.openSession({}, ctx()));
  const { session_id: b } = valueOf(await svc.openSession({}, ctx()));
  valueOf(await svc.acquire('accounts/1', { sessionId: a, waitMs: 0 }, ctx()));
  valueOf(await svc.acquire('accounts/2', { sessionId: b, waitMs: 0 }, ctx()));
  const first = svc.acquire('accounts/2', { sessionId: a, waitMs: 10_000 }, ctx());
  await new Promise((r) => setImmediate(r));
  const e = await errorOf(svc.acquire('accounts/1', { sessionId: b, waitMs: 10_000 }, ctx()));
  assert.equal(e.code, 'deadlock');
  assert.equal(ApiError.of(e).status, 409, 'the API answers it 409');
  assert.deepEqual(e.details?.['cycle'], [{ session_id: b, name: 'accounts/1' }, { session_id: a, name: 'accounts/2' }]);
  assert.match(await svc.d.metrics.registry.metrics(), /raftlock_deadlocks_total 1\b/);
  // the other wait goes on: b gives up accounts/2, a gets it
  valueOf(await svc.release('accounts/2', b, undefined, ctx()));
  assert.equal((valueOf(await first)).session_id, a);
});

test('keepalive: each grant carries how many requests wait on its name', async () => {
  const { svc, ctx } = setup();
  const { session_id: a } = valueOf(await svc.openSession({}, ctx()));
  const { session_id: b } = valueOf(await svc.openSession({}, ctx()));
  const { session_id: c } = valueOf(await svc.openSession({}, ctx()));
  valueOf(await svc.lockSets.acquireAll(['p', 'q'], { sessionId: a, waitMs: 0 }, ctx()));
  void svc.acquire('p', { sessionId: b, waitMs: 10_000 }, ctx()).catch(() => undefined);
  void svc.lockSets.acquireAll(['p', 'q'], { sessionId: c, waitMs: 10_000 }, ctx()).catch(() => undefined);
  await new Promise((r) => setImmediate(r));
  const k = valueOf(await svc.keepalive(a, ctx()));
  assert.deepEqual(k.grants?.map((g) => [g.name, g.waiters]), [['p', 2], ['q', 1]]);
  assert.equal(await codeOf(svc.lockSets.releaseAll(['p'], 'nope', ctx())), 'session_not_found');
});
