// LeaderLog's one question of leadership per proposal (leader/leader-log.ts): a request's
// first proposal leaves it to the driver (routing() decided in the same turn), whose refusal
// is answered 503 and counted as not_leader; a follow-up after an await (LeaderLog.followUp)
// asks again and, deposed, answers 503 before anything reaches the driver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Failure } from '../../../src/api/failure.js';
import { rejectionOf, setup } from '../services/service-fixture.js';

test("a deposed node's first proposal is refused by the driver: 503, nothing applied, counted as not_leader", async () => {
  const { svc, driver, ctx, depose, metrics } = setup();
  depose();
  const before = driver.appliedIndex;
  const e = await rejectionOf(svc.log.submit({ kind: 'openSession', sessionId: 'a'.repeat(32), ttlMs: 2000, owner: '', lockDelayMs: 0 }, ctx()));
  assert.equal(e.code, 'unavailable');
  assert.match(e.message, /the proposal was refused \(not_leader\); nothing was applied/);
  assert.equal(driver.appliedIndex, before, 'nothing was applied');
  assert.match(await metrics.registry.metrics(), /raftlock_raft_proposals_total\{result="not_leader"\} 1\b/);
});

test('a follow-up of a deposed node is answered 503 before the driver sees it', async () => {
  const { svc, driver, ctx, depose, metrics } = setup();
  depose();
  let proposed = 0;
  const propose = driver.propose.bind(driver);
  driver.propose = (bytes) => {
    proposed++;
    return propose(bytes);
  };
  const e = await rejectionOf(svc.log.followUp({ kind: 'openSession', sessionId: 'b'.repeat(32), ttlMs: 2000, owner: '', lockDelayMs: 0 }, ctx()));
  assert.ok(e instanceof Failure);
  assert.equal(e.code, 'unavailable');
  assert.equal(e.message, 'this node is not the leader');
  assert.equal(proposed, 0, 'the driver was not asked');
  assert.match(await metrics.registry.metrics(), /raftlock_raft_proposals_total\{result="not_leader"\} 0\b/, 'no proposal was counted');
});

test('on the leader a follow-up proposes like a first command', async () => {
  const { svc, ctx } = setup();
  const r = await svc.log.followUp({ kind: 'openSession', sessionId: 'c'.repeat(32), ttlMs: 2000, owner: '', lockDelayMs: 0 }, ctx());
  assert.equal(r.ok && r.kind, 'session_opened');
});
