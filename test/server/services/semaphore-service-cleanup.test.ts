// A semaphore release by a session that waits for permits withdraws the wait, as a lock
// release does (docs/api.md "Release"): the wait can never grant permits later — also
// when the grant wins the race against the withdrawal — and the waiting request is
// answered 409 semaphore_full.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeCommand } from '../../../src/server/app/command-codec.js';
import type { ProposalOutcome } from '../../../src/raft/driver.js';
import type { ApplyOutput } from '../../../src/lock-fsm/index.js';
import { codeOf, setup, valueOf } from './service-fixture.js';

async function heldAndQueued() {
  const f = setup();
  const sems = f.svc.semaphores;
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa')));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob')));
  valueOf(await sems.acquire('S', { sessionId: a, limit: 1, permits: 1, waitMs: 0 }, f.ctx('ka')));
  const waiting = codeOf(sems.acquire('S', { sessionId: b, limit: 1, permits: 1, waitMs: 30_000 }, f.ctx('kb')));
  await new Promise((r) => setImmediate(r));
  assert.equal(f.app.fsm.getSemaphore('S').waiters[0]?.sessionId, b, 'b is queued');
  return { ...f, sems, a, b, waiting };
}

test('a semaphore release by a queued session withdraws its wait (409 not_holder); the waiting request answers 409 semaphore_full', async () => {
  const { sems, app, ctx, a, b, waiting } = await heldAndQueued();
  assert.equal(await codeOf(sems.release('S', b, ctx('rb'))), 'not_holder');
  assert.equal(app.fsm.semWaitOf('S', b), undefined, 'the wait is gone');
  assert.equal(await waiting, 'semaphore_full', 'the waiting request is answered');
  valueOf(await sems.release('S', a, ctx('ra')));
  assert.deepEqual(app.fsm.getSemaphore('S').holders, [], 'the permit went to nobody: b gave up');
});

test('a semaphore release by a queued session releases the permits when the grant wins the race against the withdrawal', async () => {
  const { sems, app, ctx, driver, a, b, waiting } = await heldAndQueued();
  const propose = driver.propose.bind(driver);
  driver.propose = (bytes: Uint8Array): Promise<ProposalOutcome<ApplyOutput>> => {
    // a's release commits between b's release and b's cancel: b is granted the permit
    if (Buffer.from(bytes).includes(Buffer.from('semCancelWait'))) driver.applyForeign(encodeCommand({ atMs: 1, cmd: { kind: 'semRelease', name: 'S', sessionId: a } }));
    return propose(bytes);
  };
  assert.deepEqual(valueOf(await sems.release('S', b, ctx('rb'))), { name: 'S', released: true });
  assert.deepEqual(app.fsm.getSemaphore('S').holders, [], 'the grant b got was released');
  assert.equal(app.fsm.semWaitOf('S', b), undefined);
  assert.ok(['ok', 'timeout', 'semaphore_full'].includes(await waiting));
});

test('a semaphore release by a session that neither holds nor waits is 409 not_holder and changes nothing', async () => {
  const { sems, app, ctx, svc, b, waiting } = await heldAndQueued();
  const { session_id: c } = valueOf(await svc.openSession({ ttlMs: 60_000 }, ctx('oc')));
  assert.equal(await codeOf(sems.release('S', c, ctx('rc'))), 'not_holder');
  assert.equal(app.fsm.semWaitOf('S', b)?.waitMs, 30_000, "b's wait stays");
  svc.shutdown();
  assert.equal(await waiting, 'timeout');
});

test('a retry of a semaphore release whose withdrawal released the permits answers 200 as the first attempt did, and changes nothing', async () => {
  const { sems, app, ctx, driver, a, b, waiting } = await heldAndQueued();
  const propose = driver.propose.bind(driver);
  driver.propose = (bytes: Uint8Array): Promise<ProposalOutcome<ApplyOutput>> => {
    if (Buffer.from(bytes).includes(Buffer.from('semCancelWait'))) driver.applyForeign(encodeCommand({ atMs: 1, cmd: { kind: 'semRelease', name: 'S', sessionId: a } }));
    return propose(bytes);
  };
  assert.deepEqual(valueOf(await sems.release('S', b, ctx('rb'))), { name: 'S', released: true }, 'first attempt');
  driver.propose = propose;
  await waiting;
  assert.deepEqual(valueOf(await sems.release('S', b, ctx('rb'))), { name: 'S', released: true }, 'the retry with the same key');
  assert.deepEqual(app.fsm.getSemaphore('S').holders, []);
});

test('a late copy of a keyed semaphore release does not withdraw a wait the session began since', async () => {
  const { sems, app, ctx, a, b, waiting } = await heldAndQueued();
  assert.equal(await codeOf(sems.release('S', b, ctx('rb'))), 'not_holder', 'the first attempt withdraws the wait');
  assert.equal(await waiting, 'semaphore_full');
  const again = codeOf(sems.acquire('S', { sessionId: b, limit: 1, permits: 1, waitMs: 30_000 }, ctx('kb2')));
  await new Promise((r) => setImmediate(r));
  assert.equal(app.fsm.semWaitOf('S', b)?.waitMs, 30_000, 'b waits again');
  assert.equal(await codeOf(sems.release('S', b, ctx('rb'))), 'not_holder', 'the late copy: the stored answer');
  assert.equal(app.fsm.semWaitOf('S', b)?.waitMs, 30_000, "and b's new wait stays");
  valueOf(await sems.release('S', a, ctx('ra')));
  assert.equal(await again, 'ok');
});

test("a first attempt whose semaphore wait was granted and released in the batch that queued it is answered 'unknown', not 'semaphore_full' (it was granted)", async () => {
  const f = setup();
  const sems = f.svc.semaphores;
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa')));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob')));
  valueOf(await sems.acquire('S', { sessionId: a, limit: 1, permits: 1, waitMs: 0 }, f.ctx('ka')));
  f.driver.hold = true;
  const waiting = codeOf(sems.acquire('S', { sessionId: b, limit: 1, permits: 1, waitMs: 30_000 }, f.ctx('kb')));
  const relA = sems.release('S', a, f.ctx('ra'));
  const relB = sems.release('S', b, f.ctx('rb'));
  await new Promise((r) => setImmediate(r));
  f.driver.commitHeld(); // one batch: b queues, a's release grants b, b releases
  f.driver.hold = false;
  assert.equal((valueOf(await relA)).released, true);
  assert.equal((valueOf(await relB)).released, true);
  assert.equal(await waiting, 'timeout');
  assert.deepEqual(f.app.fsm.getSemaphore('S').holders, []);
});
