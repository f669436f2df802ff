// RaftLockService when leadership is lost while a command is in flight (found by
// jepsen-lite, 5 nodes, seed 4004: a leader stepped down (check-quorum) with an acquire in
// its log; the next leader committed it, the old leader — now a follower — applied it,
// resolved the proposal, waited for the grant as a follower and then answered 404
// session_not_found because its lessor (no longer leading) refused to renew the lease.
// The session was alive and held the lock; the client, told its session was gone,
// abandoned it). A deposed node cannot renew a lease, but that is an unknown outcome for
// the client to retry with its Idempotency-Key (504), never "your session is gone".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeCommand } from '../../../src/server/app/command-codec.js';
import { codeOf, setup, valueOf } from './service-fixture.js';

test('an acquire granted after this leader stepped down answers 504, not session_not_found', async () => {
  const { svc, driver, app, ctx, depose } = setup();
  const { session_id: s } = valueOf(await svc.openSession({ ttlMs: 2000 }, ctx('open')));
  driver.hold = true;
  const acq = codeOf(svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('k1')));
  depose();
  driver.commitHeld(); // the next leader commits it; this node applies it as a follower
  assert.equal(app.fsm.getLock('L').holder?.sessionId, s, 'the grant did happen');
  assert.equal(await acq, 'timeout');
  assert.ok(app.fsm.getSession(s), 'and the session is alive');
});

test('a queued acquire whose queue answer reaches a deposed leader answers 504, not session_not_found', async () => {
  const { svc, driver, app, ctx, depose } = setup();
  const { session_id: a } = valueOf(await svc.openSession({ ttlMs: 2000 }, ctx('oa')));
  const { session_id: b } = valueOf(await svc.openSession({ ttlMs: 2000 }, ctx('ob')));
  const held = valueOf(await svc.acquire('L', { sessionId: a, waitMs: 0 }, ctx('ka')));
  assert.equal(held.session_id, a);
  driver.hold = true;
  const wait = codeOf(svc.acquire('L', { sessionId: b, waitMs: 5000 }, ctx('kb')));
  depose();
  driver.commitHeld(); // 'queued', learned as a follower
  driver.applyForeign(encodeCommand({ atMs: 1, cmd: { kind: 'release', name: 'L', sessionId: a } })); // the new leader hands L to b
  assert.equal(app.fsm.getLock('L').holder?.sessionId, b);
  assert.equal(await wait, 'timeout');
});

test('a keepalive or renew that outlives its leader answers 503, not session_not_found', async () => {
  const { svc, ctx, depose, driver } = setup();
  const { session_id: s } = valueOf(await svc.openSession({ ttlMs: 2000 }, ctx('open')));
  valueOf(await svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('k')));
  // the read barrier passes, then leadership goes before the lease is renewed
  const realReadIndex = driver.readIndex.bind(driver);
  driver.readIndex = () => realReadIndex().then((r) => (depose(), r));
  assert.equal(await codeOf(svc.keepalive(s, ctx())), 'unavailable');
  driver.currentRole = 'leader';
  svc.onRoleChange(true);
  driver.readIndex = () => realReadIndex().then((r) => (depose(), r));
  assert.equal(await codeOf(svc.renew('L', s, ctx())), 'unavailable');
});
