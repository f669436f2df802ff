// A request that queued, and whose wait ended without a grant, was told so (409
// lock_held, semaphore_full, session_not_found). A later copy of it — a retry with the
// same Idempotency-Key, or the same request relayed late by a node that had been paused —
// gets that answer again and never waits again (src/server/services/ended-wait.ts,
// docs/lock-fsm.md "Idempotency").
//
// Found by jepsen-lite (seed 179705514): a client's acquire (wait_ms 233) sat in the socket
// of a paused follower; the client retried with the same key through another node, queued,
// and was answered lock_held when its wait ran out. 3.7 s later the follower resumed and
// relayed the first copy: the key's stored answer was still 'queued', the service saw no
// wait and asked again, and the lock went to the session whose client had been told it
// did not get it. The first, second and last tests fail on the build before the fix (the
// third guards the answer the old build happened to give).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Result } from '../../../src/api/service-result.js';
import type { Command } from '../../../src/lock-fsm/index.js';
import { encodeCommand } from '../../../src/server/app/command-codec.js';
import { errorOf, setup, valueOf } from './service-fixture.js';

type Fixture = ReturnType<typeof setup>;

async function sessions(f: Fixture): Promise<[string, string]> {
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa')));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob')));
  return [a, b];
}

/** `ms` pass on the leader, its lessor ticking (it ends waits by their wait_ms) */
async function pass(f: Fixture, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 100) {
    f.tick(100);
    f.svc.onTick();
    await new Promise((r) => setImmediate(r));
  }
}

/** the refusal's code and details: what a client reads (messages may be worded apart) */
async function told(p: Promise<Result<unknown>>): Promise<{ code: string; details: unknown }> {
  const e = await errorOf(p);
  return { code: e.code, details: e.details };
}

test('a late copy of an acquire whose wait ran out answers lock_held, as the wait was answered, once the lock is free (seed 179705514)', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  const held = valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  const request = () => f.svc.acquire('L', { sessionId: b, waitMs: 500 }, f.ctx('K'));
  const first = request();
  await pass(f, 800);
  const answer = await told(first);
  assert.equal(answer.code, 'lock_held');
  assert.deepEqual(answer.details, { holder: { session_id: a, owner: '', fencing_token: held.fencing_token } });
  valueOf(await f.svc.release('L', a, undefined, f.ctx('ra')));
  // the late copy: the same request, the same key, the lock free now
  assert.deepEqual(await told(request()), answer, 'the answer the wait was given, holder and all');
  assert.equal(f.app.fsm.getLock('L').held, false, 'nobody was granted the lock');
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, [], 'and nobody waits for it');
});

test('a retry whose first attempt was answered 504 and whose wait then ran out answers lock_held, and does not wait again', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  valueOf(await f.svc.acquire('X', { sessionId: a, waitMs: 0 }, f.ctx('kx')));
  // the proposal times out (504) and the entry commits under the next leader, whose lessor
  // ends the wait by its wait_ms
  f.driver.hold = true;
  const first = f.svc.acquire('X', { sessionId: b, waitMs: 1000, mode: 'shared', maxHoldMs: 3000 }, f.ctx('kxs'));
  await new Promise((r) => setImmediate(r));
  const entries = f.driver.timeOutHeld();
  f.driver.hold = false;
  assert.equal((await errorOf(first)).code, 'timeout');
  f.depose();
  f.promote();
  for (const e of entries) f.driver.applyForeign(e);
  await pass(f, 1200);
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, [], 'its wait ended by wait_ms');
  const retry = await errorOf(f.svc.acquire('X', { sessionId: b, waitMs: 1000, mode: 'shared', maxHoldMs: 3000 }, f.ctx('kxs')));
  assert.equal(retry.code, 'lock_held');
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, [], 'not asked again');
  valueOf(await f.svc.release('X', a, undefined, f.ctx('rx')));
  assert.equal(f.app.fsm.getLock('X').held, false);
});

test('a late copy of an acquire whose session ended while it waited answers session_not_found', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  const request = () => f.svc.acquire('L', { sessionId: b, waitMs: 60_000 }, f.ctx('K'));
  const first = request();
  await pass(f, 100);
  valueOf(await f.svc.closeSession(b, f.ctx('cb')));
  assert.equal((await errorOf(first)).code, 'session_not_found');
  valueOf(await f.svc.release('L', a, undefined, f.ctx('ra')));
  assert.equal((await errorOf(request())).code, 'session_not_found');
  assert.equal(f.app.fsm.getLock('L').held, false);
});

test('the same for a semaphore, a lock set and a campaign', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  valueOf(await f.svc.semaphores.acquire('S', { sessionId: a, limit: 1, permits: 1, waitMs: 0 }, f.ctx('ks')));
  valueOf(await f.svc.acquire('y', { sessionId: a, waitMs: 0 }, f.ctx('ky')));
  valueOf(await f.svc.elections.campaign('E', { sessionId: a, value: 'va', waitMs: 0 }, f.ctx('ke')));
  const sem = () => f.svc.semaphores.acquire('S', { sessionId: b, limit: 1, permits: 1, waitMs: 500 }, f.ctx('KS'));
  const set = () => f.svc.lockSets.acquireAll(['x', 'y'], { sessionId: b, waitMs: 500 }, f.ctx('KL'));
  const campaign = () => f.svc.elections.campaign('E', { sessionId: b, value: 'vb', waitMs: 500 }, f.ctx('KE'));
  const firsts = [sem(), set(), campaign()];
  await pass(f, 800);
  const answers = [];
  for (const p of firsts) answers.push(await told(p));
  assert.deepEqual(answers.map((x) => x.code), ['semaphore_full', 'lock_held', 'lock_held']);
  valueOf(await f.svc.semaphores.release('S', a, f.ctx('rs')));
  valueOf(await f.svc.release('y', a, undefined, f.ctx('ry')));
  valueOf(await f.svc.elections.resign('E', a, f.ctx('re')));
  assert.deepEqual([await told(sem()), await told(set()), await told(campaign())], answers, 'each late copy answers what its wait was told');
  assert.deepEqual(f.app.fsm.getSemaphore('S').holders, []);
  assert.equal(f.app.fsm.getLock('x').held, false);
  assert.equal(f.app.fsm.getLock('y').held, false);
  assert.equal(f.app.fsm.getElection('E').leader, null);
});

// Two acquires of one name in flight in one session: the first queues, its wait ends
// without a grant (its key stores lock_held), and the second takes the lock — all in
// one committed batch. The first request's answer is its own key's, not the grant the
// session holds through the other request (a retry of the first would answer lock_held;
// before the fix the first was answered the second's grant: services consulted the
// session's grant before the request's key).
test('a request whose wait ended answers its own key, not a grant its session took through another request of the same batch', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  const held = valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  valueOf(await f.svc.semaphores.acquire('S', { sessionId: a, limit: 1, permits: 1, waitMs: 0 }, f.ctx('ks')));
  valueOf(await f.svc.elections.campaign('E', { sessionId: a, value: 'va', waitMs: 0 }, f.ctx('ke')));
  const step = () => new Promise((r) => setImmediate(r));
  const atMs = f.app.fsm.logTimeMs;
  const foreign = (cmd: Command) => f.driver.holdForeign(encodeCommand({ atMs, cmd }));
  const base = f.driver.appliedIndex;
  f.driver.hold = true;
  // each first request queues behind a (at base + 1, + 2, + 3: the semaphore's wait is
  // known by its index)
  const first = {
    lock: f.svc.acquire('L', { sessionId: b, waitMs: 60_000 }, f.ctx('K1')),
    sem: f.svc.semaphores.acquire('S', { sessionId: b, limit: 1, permits: 1, waitMs: 60_000 }, f.ctx('KS1')),
    campaign: f.svc.elections.campaign('E', { sessionId: b, value: 'vb', waitMs: 60_000 }, f.ctx('KE1')),
  };
  await step();
  // its wait ends (the lessor's wait_ms cancel, as another leader committed it)
  foreign({ kind: 'cancelWait', name: 'L', sessionId: b });
  foreign({ kind: 'semCancelWait', name: 'S', sessionId: b, since: base + 2 });
  foreign({ kind: 'cancelWait', name: 'E', sessionId: b });
  // a lets go, and b's second request of each takes it
  const released = [f.svc.release('L', a, undefined, f.ctx('ra')), f.svc.semaphores.release('S', a, f.ctx('rs')), f.svc.elections.resign('E', a, f.ctx('re'))];
  await step();
  const second = {
    lock: f.svc.acquire('L', { sessionId: b, waitMs: 0 }, f.ctx('K2')),
    sem: f.svc.semaphores.acquire('S', { sessionId: b, limit: 1, permits: 1, waitMs: 0 }, f.ctx('KS2')),
    campaign: f.svc.elections.campaign('E', { sessionId: b, value: 'vb', waitMs: 0 }, f.ctx('KE2')),
  };
  await step();
  f.driver.hold = false;
  f.driver.commitHeld();
  for (const r of released) assert.equal((await r).ok, true);
  const lockGrant = valueOf(await second.lock);
  valueOf(await second.sem);
  valueOf(await second.campaign);
  assert.equal(f.app.fsm.getLock('L').holder?.sessionId, b, 'b holds the lock through its second request');
  const answers = [await told(first.lock), await told(first.sem), await told(first.campaign)];
  assert.deepEqual(answers.map((x) => x.code), ['lock_held', 'semaphore_full', 'lock_held'], 'each first request is told its wait ended without a grant');
  assert.deepEqual(answers[0]!.details, { holder: { session_id: a, owner: '', fencing_token: held.fencing_token } }, 'as the lock stood when its wait ended');
  // and its retry answers the same
  assert.deepEqual(await told(f.svc.acquire('L', { sessionId: b, waitMs: 60_000 }, f.ctx('K1'))), answers[0]);
  assert.equal(f.app.fsm.getLock('L').holder?.fencingToken, lockGrant.fencing_token, 'the lock is the second request\'s grant still');
});

test('a request that joined its session\'s wait answers what that wait came to when it is retried: the grant after it was released, the refusal after the wait ran out', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  // b waits for L (K1); another request of b for L joins that wait (K2)
  const first = f.svc.acquire('L', { sessionId: b, waitMs: 5000 }, f.ctx('K1'));
  const joined = f.svc.acquire('L', { sessionId: b, waitMs: 5000 }, f.ctx('K2'));
  await pass(f, 200);
  valueOf(await f.svc.release('L', a, undefined, f.ctx('ra')));
  const grant = valueOf(await first);
  assert.equal(valueOf(await joined).fencing_token, grant.fencing_token, 'both requests are answered the wait\'s grant');
  valueOf(await f.svc.release('L', b, undefined, f.ctx('rb')));
  // a retry of the joining request after the grant ended: the grant it was answered, not 504
  const retry = valueOf(await f.svc.acquire('L', { sessionId: b, waitMs: 5000 }, f.ctx('K2')));
  assert.equal(retry.fencing_token, grant.fencing_token);
  assert.equal(f.app.fsm.getLock('L').held, false, 'and nothing was granted again');

  // the same with a wait that runs out: the joining request's retry is told lock_held
  valueOf(await f.svc.acquire('M', { sessionId: a, waitMs: 0 }, f.ctx('km')));
  const w1 = f.svc.acquire('M', { sessionId: b, waitMs: 500 }, f.ctx('M1'));
  const w2 = f.svc.acquire('M', { sessionId: b, waitMs: 500 }, f.ctx('M2'));
  await pass(f, 900);
  const refusal = await told(w1);
  assert.equal(refusal.code, 'lock_held');
  assert.deepEqual(await told(w2), refusal);
  valueOf(await f.svc.release('M', a, undefined, f.ctx('rm')));
  assert.deepEqual(await told(f.svc.acquire('M', { sessionId: b, waitMs: 500 }, f.ctx('M2'))), refusal, 'the late copy is told what the wait was told');
  assert.equal(f.app.fsm.getLock('M').held, false, 'nobody was granted the lock');
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, [], 'and nobody waits for it');
});
