// An answer that grants, or returns, a grant with a maximum hold says how much of it is
// left (max_hold_ms, docs/contract.md §4 "Revocation and maximum hold"). A re-acquire that
// returns a grant an earlier request of the session made keeps that request's max hold,
// which its client may never have seen: jepsen-lite seed 380155236 (a semaphore acquire
// given up on was granted late with a max hold; the session's next acquire, with none, got
// `ok` for that grant, used it for its session's lifetime, and the permits went to others
// 43 ms later). Log time moves with the fixture's clock, at each proposal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, valueOf } from './service-fixture.js';

test('a fresh grant answers its whole max hold; a re-acquire answers what is left of it, also when it asked for none; renew says the same', async () => {
  const f = setup();
  const { session_id: s } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('o')));
  const g = valueOf(await f.svc.acquire('L', { sessionId: s, waitMs: 0, maxHoldMs: 1000 }, f.ctx('k1')));
  assert.equal(g.max_hold_ms, 1000);
  f.tick(400);
  const again = valueOf(await f.svc.acquire('L', { sessionId: s, waitMs: 0 }, f.ctx('k2')));
  assert.equal(again.fencing_token, g.fencing_token, 'the same grant');
  assert.equal(again.max_hold_ms, 600, "the grant's own max hold, less the log time since it was made");
  const longer = valueOf(await f.svc.acquire('L', { sessionId: s, waitMs: 0, maxHoldMs: 60_000 }, f.ctx('k3')));
  assert.equal(longer.max_hold_ms, 600, 'asking for a longer one changes nothing');
  assert.equal(valueOf(await f.svc.renew('L', s, f.ctx('r'))).max_hold_ms, 600);
  assert.equal(valueOf(await f.svc.acquire('P', { sessionId: s, waitMs: 0 }, f.ctx('k4'))).max_hold_ms, undefined, 'no max hold, no field');
});

test('the same for a semaphore, a campaign and each grant of a lock set', async () => {
  const f = setup();
  const { session_id: s } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('o')));
  valueOf(await f.svc.semaphores.acquire('S', { sessionId: s, limit: 2, permits: 1, waitMs: 0, maxHoldMs: 2000 }, f.ctx('ks')));
  valueOf(await f.svc.elections.campaign('E', { sessionId: s, value: 'v', waitMs: 0, maxHoldMs: 3000 }, f.ctx('ke')));
  valueOf(await f.svc.acquire('x', { sessionId: s, waitMs: 0, maxHoldMs: 1500 }, f.ctx('kx')));
  f.tick(500);
  assert.equal(valueOf(await f.svc.semaphores.acquire('S', { sessionId: s, limit: 2, permits: 1, waitMs: 0 }, f.ctx('ks2'))).max_hold_ms, 1500);
  assert.equal(valueOf(await f.svc.elections.campaign('E', { sessionId: s, value: 'v', waitMs: 0 }, f.ctx('ke2'))).max_hold_ms, 2500);
  const set = valueOf(await f.svc.lockSets.acquireAll(['x', 'y'], { sessionId: s, waitMs: 0, maxHoldMs: 4000 }, f.ctx('kset')));
  assert.deepEqual(set.grants.map((r) => [r.name, r.max_hold_ms]), [['x', 1000], ['y', 4000]], 'x keeps its own max hold, y gets the set\'s');
});
