// Revocation and max hold through the node's service (docs/contract.md §4 "Revocation and
// maximum hold"): what the holder and the next waiter see, the lessor's expiry in log
// time, and raftlock_lock_hold_seconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { codeOf, setup, valueOf } from './service-fixture.js';

test('revoke: the holder learns it from renew (not_holder) and its session; the waiter gets a larger token; no lock-delay', async () => {
  const { svc, app, ctx } = setup();
  const { session_id: a } = valueOf(await svc.openSession({ lockDelayMs: 5000 }, ctx()));
  const { session_id: b } = valueOf(await svc.openSession({}, ctx()));
  const first = valueOf(await svc.acquire('L', { sessionId: a, waitMs: 0 }, ctx()));
  const waiting = svc.acquire('L', { sessionId: b, waitMs: 10_000 }, ctx());
  const r = valueOf(await svc.revoke('L', a, ctx()));
  assert.deepEqual(r, { name: 'L', revoked: [{ session_id: a, fencing_token: first.fencing_token }] });
  const next = valueOf(await waiting);
  assert.equal(next.session_id, b);
  assert.ok(next.fencing_token > first.fencing_token, 'a larger token');
  assert.equal(await codeOf(svc.renew('L', a, ctx())), 'not_holder');
  assert.deepEqual((valueOf(await svc.getSession(a, ctx()))).locks, [], 'the session lives on, without the lock');
  assert.equal(app.fsm.getLock('L').inDelay, false);
  assert.equal(await codeOf(svc.revoke('L', a, ctx())), 'not_holder', 'a session without a grant');
  assert.equal(await codeOf(svc.revoke('L', 'nope', ctx())), 'session_not_found');
  // every grant of a semaphore
  valueOf(await svc.semaphores.acquire('S', { sessionId: a, limit: 3, permits: 1, waitMs: 0 }, ctx()));
  valueOf(await svc.semaphores.acquire('S', { sessionId: b, limit: 3, permits: 2, waitMs: 0 }, ctx()));
  const all = valueOf(await svc.semaphores.revoke('S', undefined, ctx()));
  assert.deepEqual(all.revoked.map((g) => g.session_id), [a, b].sort());
  assert.equal(app.fsm.getSemaphore('S').inUse, 0);
});

test('max hold: the lessor frees the grant max_hold_ms after it was made although its session is kept alive; lock-delay follows; the hold is measured', async () => {
  const { svc, app, ctx, tick } = setup();
  const { session_id: a } = valueOf(await svc.openSession({ ttlMs: 60_000, lockDelayMs: 1000 }, ctx()));
  const g = valueOf(await svc.acquire('L', { sessionId: a, waitMs: 0, maxHoldMs: 3000 }, ctx()));
  for (let t = 0; t < 2900; t += 100) {
    tick(100);
    valueOf(await svc.keepalive(a, ctx()));
    svc.onTick();
  }
  assert.equal(app.fsm.check('L', g.fencing_token), true, 'still held before its max hold');
  tick(200);
  svc.onTick();
  await new Promise((r) => setImmediate(r));
  assert.equal(app.fsm.check('L', g.fencing_token), false, 'freed by its max hold');
  assert.ok(app.fsm.getSession(a), 'the session stays alive');
  assert.equal(app.fsm.getLock('L').inDelay, true, 'a lock freed by max hold enters the session\'s lock-delay');
  assert.equal(await codeOf(svc.renew('L', a, ctx())), 'not_holder');
  const text = await svc.d.metrics.registry.metrics();
  assert.match(text, /raftlock_lock_hold_seconds_count\{kind="lock",end="max_hold"\} 1/);
  assert.match(text, /raftlock_lock_hold_seconds_sum\{kind="lock",end="max_hold"\} 3\.\d/);
});
