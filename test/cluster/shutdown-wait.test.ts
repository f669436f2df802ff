// A leader that stops while still leading (here the only voter, so there is nobody to hand
// over to) must not answer a queued acquire 503 "nothing was applied": the acquire is a
// committed entry, and the next leader (here the same node, restarted) re-arms its wait
// and grants the lock. The answer is 504, outcome unknown (docs/api.md "Errors").
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';

describe('a single voter stopping with a queued acquire', { timeout: 60_000 }, () => {
  let h: ClusterHarness;
  before(async () => {
    h = await ClusterHarness.create({ nodes: 1, session: { default_ttl_ms: 60_000 } });
    h.startAll();
    await h.waitForLeader(15_000);
  });
  after(async () => {
    await h?.close();
  });

  it('answers the queued acquire 504, and the restarted leader grants the wait it re-armed', async () => {
    const post = (path: string, body: unknown, key?: string) => h.request('n1', 'POST', path, body, key ? { 'idempotency-key': key } : {});
    const a = await post('/v1/sessions', { ttl_ms: 60_000 });
    const b = await post('/v1/sessions', { ttl_ms: 60_000 });
    assert.equal(a.status, 201, a.text);
    const sa = a.body.session_id as string;
    const sb = b.body.session_id as string;
    assert.equal((await post('/v1/locks/L/acquire', { session_id: sa })).status, 200);
    const queued = post('/v1/locks/L/acquire', { session_id: sb, wait_ms: 30_000 }, 'wait-b');
    await eventually(async () => (await h.request('n1', 'GET', '/v1/locks/L')).body?.waiters === 1, 10_000, 'b queued for L');

    const stopped = h.stop('n1');
    const answer = await queued;
    assert.equal(answer.status, 504, `the queued acquire's answer: ${answer.text}`);
    assert.equal(answer.body.error.code, 'timeout');
    assert.equal(await stopped, 0);

    h.start('n1');
    await h.waitForLeader(15_000);
    assert.equal((await post('/v1/locks/L/release', { session_id: sa })).status, 200);
    const g = await eventually(async () => {
      const r = await h.request('n1', 'GET', '/v1/locks/L');
      return r.body?.holder?.session_id === sb ? r : null;
    }, 10_000, 'b granted L by its re-armed wait');
    assert.ok(g.body.holder.fencing_token > 0);
  });
});
