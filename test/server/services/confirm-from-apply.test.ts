// A semaphore or election grant is answered from what the state machine applied for THAT
// request (docs/architecture.md "Services answer a Result"): the apply's sem_acquired /
// acquired result, or the granted event of a request that waited, with one holdsGrant look
// to know it still stands — as a lock's grant (lock-service.ts confirmGrant). Each test
// lets a later entry of the same committed batch change the state the answer used to be
// re-read from (a semaphore's limit, an election's value): a re-read would answer that,
// the apply result answers the request's own grant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { codeOf, errorOf, setup, valueOf } from './service-fixture.js';

type Fixture = ReturnType<typeof setup>;

async function sessions(f: Fixture, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx(`open-${i}`))).session_id);
  return out;
}

/** hold proposals back, start each request, then commit them in one batch */
async function inOneBatch<T extends unknown[]>(f: Fixture, start: () => { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  f.driver.hold = true;
  const pending = start();
  await new Promise((r) => setImmediate(r)); // every proposal reached the driver
  f.driver.hold = false;
  f.driver.commitHeld();
  return (await Promise.all(pending)) as T;
}

/** counts the state machine's reads of `method` while `fn` runs */
async function readsOf<R>(f: Fixture, method: 'getSemaphore' | 'getElection', fn: () => Promise<R>): Promise<{ reads: number; out: R }> {
  const fsm = f.app.fsm as unknown as Record<string, (...a: unknown[]) => unknown>;
  const real = fsm[method]!;
  let reads = 0;
  fsm[method] = function (this: unknown, ...a: unknown[]) {
    reads++;
    return real.apply(this, a);
  };
  try {
    return { out: await fn(), reads };
  } finally {
    fsm[method] = real;
  }
}

test('a semaphore grant answers the limit its apply granted under, not one a later entry of the batch set', async () => {
  const f = setup();
  const [a] = await sessions(f, 1);
  const sems = f.svc.semaphores;
  const [grant, limit] = await inOneBatch<[Awaited<ReturnType<typeof sems.acquire>>, Awaited<ReturnType<typeof sems.setLimit>>]>(f, () => [
    sems.acquire('S', { sessionId: a!, limit: 2, permits: 2, waitMs: 0 }, f.ctx('k1')),
    sems.setLimit('S', 3, f.ctx('k2')),
  ]);
  assert.equal(valueOf(limit).limit, 3);
  assert.equal(f.app.fsm.getSemaphore('S').limit, 3, 'the state says 3 now');
  assert.deepEqual(valueOf(grant), { name: 'S', session_id: a, permits: 2, limit: 2, fencing_token: valueOf(grant).fencing_token, ttl_ms: 60_000 }, 'the grant as applied: limit 2');
});

test('a semaphore grant is confirmed without reading the semaphore back (one holdsGrant look)', async () => {
  const f = setup();
  const [a] = await sessions(f, 1);
  const { reads, out } = await readsOf(f, 'getSemaphore', () => f.svc.semaphores.acquire('S', { sessionId: a!, limit: 1, permits: 1, waitMs: 0 }, f.ctx('k')));
  assert.equal(valueOf(out).permits, 1);
  assert.equal(reads, 0);
});

test('a semaphore grant made to a waiting request answers its granted event: permits and limit as granted', async () => {
  const f = setup();
  const [a, b] = await sessions(f, 2);
  const sems = f.svc.semaphores;
  valueOf(await sems.acquire('S', { sessionId: a!, limit: 1, permits: 1, waitMs: 0 }, f.ctx('ka')));
  const waiting = sems.acquire('S', { sessionId: b!, limit: 1, permits: 1, waitMs: 30_000 }, f.ctx('kb'));
  await new Promise((r) => setImmediate(r));
  assert.equal(f.app.fsm.semWaitOf('S', b!) !== undefined, true, 'b waits');
  // a's release grants b (limit 1); the limit is raised in the same batch
  await inOneBatch(f, () => [sems.release('S', a!, f.ctx('ra')), sems.setLimit('S', 5, f.ctx('l5'))]);
  const g = valueOf(await waiting);
  assert.equal(f.app.fsm.getSemaphore('S').limit, 5, 'the state says 5 now');
  assert.deepEqual([g.session_id, g.permits, g.limit], [b, 1, 1], 'the grant as its event carried it');
});

test('a semaphore grant that a later entry of its batch ended is answered with what is true now: 409 semaphore_full', async () => {
  const f = setup();
  const [a] = await sessions(f, 1);
  const sems = f.svc.semaphores;
  const [grant] = await inOneBatch(f, () => [
    codeOf(sems.acquire('S', { sessionId: a!, limit: 1, permits: 1, waitMs: 0 }, f.ctx('k1'))),
    codeOf(sems.revoke('S', a, f.ctx('k2'))),
  ]);
  assert.equal(grant, 'semaphore_full');
});

test("a campaign answers the value it was granted with, not one a later entry of the batch proclaimed", async () => {
  const f = setup();
  const [a] = await sessions(f, 1);
  const el = f.svc.elections;
  const [won, proclaimed] = await inOneBatch<[Awaited<ReturnType<typeof el.campaign>>, Awaited<ReturnType<typeof el.proclaim>>]>(f, () => [
    el.campaign('E', { sessionId: a!, value: 'first', waitMs: 0 }, f.ctx('c1')),
    el.proclaim('E', a!, 'second', f.ctx('p1')),
  ]);
  assert.equal(valueOf(proclaimed).value, 'second');
  assert.equal(f.app.fsm.getElection('E').leader?.value, 'second', 'the state says second now');
  assert.equal(valueOf(won).value, 'first', 'the leadership as applied');
});

test('a campaign is confirmed without reading the election back (one holdsGrant look)', async () => {
  const f = setup();
  const [a] = await sessions(f, 1);
  const { reads, out } = await readsOf(f, 'getElection', () => f.svc.elections.campaign('E', { sessionId: a!, value: 'v', waitMs: 0 }, f.ctx('c')));
  assert.equal(valueOf(out).value, 'v');
  assert.equal(reads, 0);
});

test("a campaign that waited answers its granted event's value, not one proclaimed in the same batch", async () => {
  const f = setup();
  const [a, b] = await sessions(f, 2);
  const el = f.svc.elections;
  valueOf(await el.campaign('E', { sessionId: a!, value: 'va', waitMs: 0 }, f.ctx('ca')));
  const waiting = el.campaign('E', { sessionId: b!, value: 'vb', waitMs: 30_000 }, f.ctx('cb'));
  await new Promise((r) => setImmediate(r));
  assert.notEqual(f.app.fsm.waitOf('E', b!), undefined, 'b waits');
  // a resigns, which makes b the leader with 'vb'; b's session proclaims in the same batch
  await inOneBatch(f, () => [el.resign('E', a!, f.ctx('ra')), el.proclaim('E', b!, 'later', f.ctx('pb'))]);
  assert.equal(f.app.fsm.getElection('E').leader?.value, 'later', 'the state says later now');
  const g = valueOf(await waiting);
  assert.deepEqual([g.session_id, g.value], [b, 'vb'], 'the leadership as its event carried it');
});

test('a campaign that a later entry of its batch ended is answered with what is true now: 409 lock_held', async () => {
  const f = setup();
  const [a] = await sessions(f, 1);
  const el = f.svc.elections;
  const [won] = await inOneBatch(f, () => [codeOf(el.campaign('E', { sessionId: a!, value: 'v', waitMs: 0 }, f.ctx('c1'))), codeOf(el.resign('E', a!, f.ctx('r1')))]);
  assert.equal(won, 'lock_held');
});

test('an acquire whose grant a later entry of the same batch ended is refused with what is true now, saying why', async () => {
  const f = setup();
  const [a] = await sessions(f, 1);
  valueOf(await f.svc.acquire('L', { sessionId: a!, waitMs: 0 }, f.ctx('k0')));
  // a second acquire of the session returns its grant; the release after it in the batch ends it
  f.driver.hold = true;
  const again = f.svc.acquire('L', { sessionId: a!, waitMs: 0 }, f.ctx('k1'));
  const released = f.svc.release('L', a!, undefined, f.ctx('k2'));
  await new Promise((r) => setImmediate(r)); // both proposals reached the driver
  f.driver.hold = false;
  f.driver.commitHeld();
  valueOf(await released);
  const refusal = await errorOf(again);
  assert.equal(refusal.code, 'lock_held');
  assert.match(refusal.message, /the grant this request got for lock L ended before the answer/);
  assert.doesNotMatch(refusal.message, /lock-delay/, 'the lock is free, not in lock-delay');
  assert.equal(f.app.fsm.getLock('L').held, false);
});
