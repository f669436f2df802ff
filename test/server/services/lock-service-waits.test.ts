// A wait ends by its wait_ms whichever node proposed it and however many leaders came
// between (docs/lock-fsm.md "The lessor (leader only)"). The reproduction: a leader
// proposes a queued acquire (wait_ms 1000) and is deposed before it commits; its client is
// answered 504; the next leader's first entry commits the acquire. No request waits on
// the new leader, so only its lessor can end that wait: it learns of it from the log. It
// used to track only waits its own API layer queued, and the lock went, a minute later,
// to a session whose client had stopped waiting long ago. For a lock, a shared lock, a
// semaphore and an election. (Here the "next leader" is this node in a new term, fed the
// committed entry as another leader's.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Result } from '../../../src/api/service-result.js';
import { codeOf, setup, valueOf } from './service-fixture.js';

type Fixture = ReturnType<typeof setup>;

/** `request` is proposed and times out (504); the node loses office and takes it again;
 *  the proposed entry commits under the new term; wait_ms passes, with the lessor ticking */
async function committedUnderTheNextLeader(f: Fixture, request: () => Promise<Result<unknown>>, waitMs: number): Promise<string> {
  f.driver.hold = true;
  const answer = codeOf(request());
  await new Promise((r) => setImmediate(r));
  const entries = f.driver.timeOutHeld(); // the proposal timeout: 504, the entry may still commit
  f.driver.hold = false;
  const code = await answer;
  f.depose();
  f.promote();
  for (const e of entries) f.driver.applyForeign(e); // the next leader's noop commits it
  for (let t = 0; t < waitMs + 200; t += 100) {
    f.tick(100);
    f.svc.onTick();
    await new Promise((r) => setImmediate(r));
  }
  return code;
}

async function sessions(f: Fixture): Promise<[string, string]> {
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa')));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob')));
  return [a, b];
}

test('a queued acquire committed under the next leader is cancelled after wait_ms; the lock never goes to that session', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  const code = await committedUnderTheNextLeader(f, () => f.svc.acquire('L', { sessionId: b, waitMs: 1000 }, f.ctx('kb')), 1000);
  assert.equal(code, 'timeout', 'the client was answered 504');
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, [], 'its wait ended by wait_ms');
  valueOf(await f.svc.release('L', a, undefined, f.ctx('ra')));
  assert.equal(f.app.fsm.getLock('L').holder, undefined, 'a later release hands the lock to nobody');
  assert.equal(f.lessor.counts().waits, 0);
});

test('never early: the wait learned from the log still stands just before wait_ms has passed', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  f.driver.hold = true;
  const answer = codeOf(f.svc.acquire('L', { sessionId: b, waitMs: 1000 }, f.ctx('kb')));
  await new Promise((r) => setImmediate(r));
  const entries = f.driver.timeOutHeld();
  f.driver.hold = false;
  assert.equal(await answer, 'timeout');
  f.depose();
  f.promote();
  for (const e of entries) f.driver.applyForeign(e);
  for (let t = 0; t < 900; t += 100) {
    f.tick(100);
    f.svc.onTick();
  }
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, ['L']);
  valueOf(await f.svc.release('L', a, undefined, f.ctx('ra')));
  assert.equal(f.app.fsm.getLock('L').holder?.sessionId, b, 'within wait_ms the lock goes to it (a retry with its key learns so)');
});

test('the same for a shared lock, a semaphore and a campaign', async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  valueOf(await f.svc.acquire('X', { sessionId: a, waitMs: 0 }, f.ctx('kx')));
  assert.equal(await committedUnderTheNextLeader(f, () => f.svc.acquire('X', { sessionId: b, waitMs: 1000, mode: 'shared' }, f.ctx('kxs')), 1000), 'timeout');
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, []);

  valueOf(await f.svc.semaphores.acquire('S', { sessionId: a, limit: 1, permits: 1, waitMs: 0 }, f.ctx('ks')));
  assert.equal(await committedUnderTheNextLeader(f, () => f.svc.semaphores.acquire('S', { sessionId: b, limit: 1, permits: 1, waitMs: 1500 }, f.ctx('ksb')), 1500), 'timeout');
  assert.equal(f.app.fsm.semWaitOf('S', b), undefined);

  valueOf(await f.svc.elections.campaign('E', { sessionId: a, value: 'va', waitMs: 0 }, f.ctx('ke')));
  assert.equal(await committedUnderTheNextLeader(f, () => f.svc.elections.campaign('E', { sessionId: b, value: 'vb', waitMs: 2000 }, f.ctx('keb')), 2000), 'timeout');
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, []);

  valueOf(await f.svc.release('X', a, undefined, f.ctx('rx')));
  valueOf(await f.svc.semaphores.release('S', a, f.ctx('rs')));
  valueOf(await f.svc.elections.resign('E', a, f.ctx('re')));
  assert.equal(f.app.fsm.getLock('X').holders?.length ?? 0, 0);
  assert.deepEqual(f.app.fsm.getSemaphore('S').holders, []);
  assert.equal(f.app.fsm.getElection('E').leader, null);
});

test("a first attempt whose wait was granted and released in the batch that queued it is answered 'unknown', never asked again (the lock would go to a session that let it go)", async () => {
  const f = setup();
  const [a, b] = await sessions(f);
  valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  f.driver.hold = true;
  // one Ready's committed batch, applied before any proposer's continuation runs: b queues,
  // a's release grants it to b, b (its client gave up) releases it
  const acquired = codeOf(f.svc.acquire('L', { sessionId: b, waitMs: 1000 }, f.ctx('kb')));
  const releasedA = f.svc.release('L', a, undefined, f.ctx('ra'));
  const releasedB = f.svc.release('L', b, undefined, f.ctx('rb'));
  await new Promise((r) => setImmediate(r));
  f.driver.commitHeld();
  f.driver.hold = false;
  assert.equal((valueOf(await releasedA)).released, true);
  assert.equal((valueOf(await releasedB)).released, true);
  assert.equal(await acquired, 'timeout', 'the outcome is unknown: it was granted and released before the answer');
  assert.equal(f.app.fsm.getLock('L').holder, undefined, 'nobody holds the lock: b released it and did not ask again');
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, []);
});
