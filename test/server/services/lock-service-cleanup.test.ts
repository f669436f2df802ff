// What a client that gave up on an acquire can rely on (docs/api.md "Errors", "Release";
// docs/client.md "An acquire that fails never leaves a grant behind"):
// - a release by a session that waits for the lock withdraws the wait, so the wait cannot
//   grant the lock later — also when the grant wins the race against the withdrawal;
// - a leader that stops while an acquire waits answers 504 (the wait is committed and the
//   next leader re-arms it), never 503 ("nothing was applied").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeCommand } from '../../../src/server/app/command-codec.js';
import type { ProposalOutcome } from '../../../src/raft/driver.js';
import type { ApplyOutput } from '../../../src/lock-fsm/index.js';
import { codeOf, setup, valueOf } from './service-fixture.js';

async function heldAndQueued() {
  const f = setup();
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa')));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob')));
  valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  const waiting = codeOf(f.svc.acquire('L', { sessionId: b, waitMs: 30_000 }, f.ctx('kb')));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, ['L'], 'b is queued');
  return { ...f, a, b, waiting };
}

test('a release by a queued session withdraws its wait (409 not_holder), so the wait can never grant it', async () => {
  const { svc, app, ctx, a, b, waiting } = await heldAndQueued();
  assert.equal(await codeOf(svc.release('L', b, undefined, ctx('rb'))), 'not_holder');
  assert.deepEqual(app.fsm.getSession(b)?.waiting, [], 'the wait is gone');
  assert.equal(await waiting, 'lock_held', 'the waiting request is answered');
  valueOf(await svc.release('L', a, undefined, ctx('ra')));
  assert.equal(app.fsm.getLock('L').held, false, 'the lock went to nobody: b gave up');
});

test('a release by a queued session releases the lock when the grant wins the race against the withdrawal', async () => {
  const { svc, app, ctx, driver, a, b, waiting } = await heldAndQueued();
  const propose = driver.propose.bind(driver);
  driver.propose = (bytes: Uint8Array): Promise<ProposalOutcome<ApplyOutput>> => {
    // a's release commits between b's release and b's cancel: b is granted L
    if (Buffer.from(bytes).includes(Buffer.from('cancelWait'))) driver.applyForeign(encodeCommand({ atMs: 1, cmd: { kind: 'release', name: 'L', sessionId: a } }));
    return propose(bytes);
  };
  valueOf(await svc.release('L', b, undefined, ctx('rb')));
  assert.equal(app.fsm.getLock('L').held, false, 'the grant b got was released');
  assert.deepEqual(app.fsm.getSession(b)?.waiting, []);
  assert.ok(['ok', 'timeout'].includes(await waiting));
});

// jepsen-lite seed 5151 (5 nodes, packet faults): the first attempt of a keyed release
// by a queued session lost the race to the grant and released the lock through the
// withdrawal (answer 200), but the client never saw that answer; its retry with the same
// Idempotency-Key was answered from the FSM's stored result of the first release command,
// 409 not_holder, and the session no longer waited, so nothing corrected it. The contract
// (docs/contract.md "Idempotency") wants the first answer. Running the withdrawal again on
// the retry is not the fix (see the next-but-one test); the release command itself would
// have to withdraw the wait, so that its stored result is the whole answer.
test('a retry of a release whose withdrawal released the lock answers as the first attempt did (200)', async () => {
  const { svc, app, ctx, driver, a, b, waiting } = await heldAndQueued();
  const propose = driver.propose.bind(driver);
  driver.propose = (bytes: Uint8Array): Promise<ProposalOutcome<ApplyOutput>> => {
    if (Buffer.from(bytes).includes(Buffer.from('cancelWait'))) driver.applyForeign(encodeCommand({ atMs: 1, cmd: { kind: 'release', name: 'L', sessionId: a } }));
    return propose(bytes);
  };
  assert.deepEqual(valueOf(await svc.release('L', b, undefined, ctx('rb'))), { name: 'L', released: true }, 'first attempt');
  assert.equal(app.fsm.getLock('L').held, false);
  driver.propose = propose;
  await waiting;
  assert.deepEqual(valueOf(await svc.release('L', b, undefined, ctx('rb'))), { name: 'L', released: true }, 'the retry with the same key');
  assert.equal(app.fsm.getLock('L').held, false, 'and changed nothing');
});

test('a retry of a release that withdrew a wait answers 409 not_holder again, and changes nothing', async () => {
  const { svc, app, ctx, a, b, waiting } = await heldAndQueued();
  assert.equal(await codeOf(svc.release('L', b, undefined, ctx('rb'))), 'not_holder');
  assert.equal(await waiting, 'lock_held');
  assert.equal(await codeOf(svc.release('L', b, undefined, ctx('rb'))), 'not_holder');
  assert.equal(app.fsm.getLock('L').holder?.sessionId ?? null, a, 'a still holds L');
});

test('a late copy of a keyed cleanup release changes nothing: it does not release a grant the session got since', async () => {
  // jepsen-lite seed 5151, 5 nodes: attempt 1 sat on a paused node; attempt 2 committed the
  // release (409: neither held nor queued); the client acquired the lock again; then
  // attempt 1 reached the leader as a replay
  const { svc, app, ctx, a, b, waiting } = await heldAndQueued();
  assert.equal(await codeOf(svc.release('L', b, undefined, ctx('rb0'))), 'not_holder', 'the wait is withdrawn');
  assert.equal(await waiting, 'lock_held');
  assert.equal(await codeOf(svc.release('L', b, undefined, ctx('rb'))), 'not_holder', 'neither held nor queued: nothing to withdraw');
  valueOf(await svc.release('L', a, undefined, ctx('ra')));
  const grant = valueOf(await svc.acquire('L', { sessionId: b, waitMs: 0 }, ctx('kb2')));
  assert.equal(await codeOf(svc.release('L', b, undefined, ctx('rb'))), 'not_holder', 'the stored answer');
  assert.equal(app.fsm.getLock('L').holder?.sessionId, b, 'b still holds L');
  assert.equal(app.fsm.getLock('L').holder?.fencingToken, grant.fencing_token);
});

test('a release by a session granted the lock after the release committed (not yet waiting, not yet holding at its commit) releases it', async () => {
  const { svc, app, ctx, driver, a, b, waiting } = await heldAndQueued();
  // b's release commits while b still waits; a's release commits right after it, so by the
  // time the service looks, b is the holder and no longer waits
  const propose = driver.propose.bind(driver);
  let once = false;
  driver.propose = async (bytes: Uint8Array): Promise<ProposalOutcome<ApplyOutput>> => {
    const out = await propose(bytes);
    if (!once && Buffer.from(bytes).includes(Buffer.from('release'))) {
      once = true;
      driver.applyForeign(encodeCommand({ atMs: 1, cmd: { kind: 'release', name: 'L', sessionId: a } }));
    }
    return out;
  };
  assert.deepEqual(valueOf(await svc.release('L', b, undefined, ctx('rb'))), { name: 'L', released: true });
  assert.equal(app.fsm.getLock('L').held, false, 'no grant left behind');
  assert.ok(['ok', 'timeout'].includes(await waiting));
});

test('a release with a fencing token does not touch a wait', async () => {
  const { svc, app, ctx, b, waiting } = await heldAndQueued();
  assert.equal(await codeOf(svc.release('L', b, 12345, ctx('rb'))), 'not_holder');
  assert.deepEqual(app.fsm.getSession(b)?.waiting, ['L']);
  svc.shutdown();
  await waiting;
});

test('a leader that stops while an acquire waits answers 504: the wait is committed and stays', async () => {
  const { svc, app, b, waiting } = await heldAndQueued();
  svc.shutdown();
  assert.equal(await waiting, 'timeout');
  assert.deepEqual(app.fsm.getSession(b)?.waiting, ['L'], 'the next leader will re-arm this wait');
});

test('a waiting acquire whose client went away answers 504, not 503', async () => {
  const f = setup();
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa')));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob')));
  valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  const ac = new AbortController();
  const waiting = codeOf(f.svc.acquire('L', { sessionId: b, waitMs: 30_000 }, { signal: ac.signal, idempotencyKey: 'kb' }));
  await new Promise((r) => setImmediate(r));
  ac.abort();
  assert.equal(await waiting, 'timeout');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, [], 'the server gave the place up');
});
