// raftlock_lock_acquire_total{result} (docs/api.md "Metrics"): every acquire is counted
// once by its outcome, and once more as `queued` when it waited; RaftLockService.acquire
// counts in one place. A wait that ended with its session, or an acquire refused before
// it was proposed, used to go uncounted; so did an acquire-all's wait that ended with its
// session (both services count around the whole acquire now: acquire-metric.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { codeOf, setup, valueOf } from './service-fixture.js';

type Fixture = ReturnType<typeof setup>;

async function counts(f: Fixture): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await f.metrics.lockAcquire.get()).values) if (v.value > 0) out[String(v.labels.result)] = v.value;
  return out;
}

test('a grant, a refusal, a wait that ends with its session, and an unknown session: each counted once by outcome', async () => {
  const f = setup();
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx()));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx()));
  assert.equal(await codeOf(f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx())), 'ok');
  assert.equal(await codeOf(f.svc.acquire('L', { sessionId: b, waitMs: 0 }, f.ctx())), 'lock_held');
  assert.deepEqual(await counts(f), { acquired: 1, lock_held: 1 });

  const waiting = codeOf(f.svc.acquire('L', { sessionId: b, waitMs: 5000 }, f.ctx()));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, ['L'], 'b waits for L');
  valueOf(await f.svc.closeSession(b, f.ctx()));
  assert.equal(await waiting, 'session_not_found');
  assert.deepEqual(await counts(f), { acquired: 1, lock_held: 1, queued: 1, session_not_found: 1 });

  assert.equal(await codeOf(f.svc.acquire('L', { sessionId: 'no-such-session', waitMs: 0 }, f.ctx())), 'session_not_found');
  assert.deepEqual(await counts(f), { acquired: 1, lock_held: 1, queued: 1, session_not_found: 2 });
});

test('acquire-all: a wait that ends with its session is counted as session_not_found, as a single acquire\'s is', async () => {
  const f = setup();
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx()));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx()));
  valueOf(await f.svc.lockSets.acquireAll(['x', 'y'], { sessionId: a, waitMs: 0 }, f.ctx()));
  assert.equal(await codeOf(f.svc.lockSets.acquireAll(['y', 'z'], { sessionId: b, waitMs: 0 }, f.ctx())), 'lock_held');
  assert.deepEqual(await counts(f), { acquired: 1, lock_held: 1 }, 'each set counted once, not per name');
  const waiting = codeOf(f.svc.lockSets.acquireAll(['x', 'y'], { sessionId: b, waitMs: 5000 }, f.ctx()));
  await new Promise((r) => setImmediate(r));
  assert.ok((f.app.fsm.getSession(b)?.waiting ?? []).length > 0, 'b waits for the set');
  valueOf(await f.svc.closeSession(b, f.ctx()));
  assert.equal(await waiting, 'session_not_found');
  assert.deepEqual(await counts(f), { acquired: 1, lock_held: 1, queued: 1, session_not_found: 1 });
});
