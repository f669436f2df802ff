// What a client that gave up on an acquire can rely on (docs/api.md "Errors", "Release";
// docs/client.md "An acquire that fails never leaves a grant behind"):
// - a release by a session that waits for the lock withdraws the wait, so the wait cannot
//   grant the lock later — also when the grant wins the race against the withdrawal;
// - a leader that stops while an acquire waits answers 504 (the wait is committed and the
//   next leader re-arms it), never 503 ("nothing was applied").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeCommand } from '../../src/node/command-codec.js';
import type { ProposalOutcome } from '../../src/raft/node.js';
import { codeOf, setup } from './service-fixture.js';

async function heldAndQueued() {
  const f = setup();
  const { session_id: a } = await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa'));
  const { session_id: b } = await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob'));
  await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka'));
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
  await svc.release('L', a, undefined, ctx('ra'));
  assert.equal(app.fsm.getLock('L').held, false, 'the lock went to nobody: b gave up');
});

test('a release by a queued session releases the lock when the grant wins the race against the withdrawal', async () => {
  const { svc, app, ctx, driver, a, b, waiting } = await heldAndQueued();
  const propose = driver.propose.bind(driver);
  driver.propose = (bytes: Uint8Array): Promise<ProposalOutcome> => {
    // a's release commits between b's release and b's cancel: b is granted L
    if (Buffer.from(bytes).includes(Buffer.from('cancelWait'))) driver.applyForeign(encodeCommand({ atMs: 1, cmd: { kind: 'release', name: 'L', sessionId: a } }));
    return propose(bytes);
  };
  await svc.release('L', b, undefined, ctx('rb'));
  assert.equal(app.fsm.getLock('L').held, false, 'the grant b got was released');
  assert.deepEqual(app.fsm.getSession(b)?.waiting, []);
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
  const { session_id: a } = await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa'));
  const { session_id: b } = await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob'));
  await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka'));
  const ac = new AbortController();
  const waiting = codeOf(f.svc.acquire('L', { sessionId: b, waitMs: 30_000 }, { signal: ac.signal, idempotencyKey: 'kb' }));
  await new Promise((r) => setImmediate(r));
  ac.abort();
  assert.equal(await waiting, 'timeout');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(f.app.fsm.getSession(b)?.waiting, [], 'the server gave the place up');
});
