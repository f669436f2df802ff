// A wait ends by its wait_ms however many leaders came between (docs/lock-fsm.md "The
// lessor (leader only)"), on a real 3-node cluster: the leader takes a queued acquire
// (wait_ms 1000) and is stopped (SIGSTOP) before the entry commits, its followers having
// been stopped just before it, so that the entry sits in their socket buffers; they come
// back, elect one of themselves, and its first entry commits the acquire. No request
// waits on the new leader: only its lessor, learning of the wait from the log, can end
// it. The old leader, resumed, answers its client 504. After wait_ms the wait is gone, and
// a later release does not hand the lock to the session whose client stopped waiting (it
// used to: the wait stood until that session ended, while the holder released a minute
// later).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, eventually, type HarnessResponse } from '../support/cluster-harness.js';
import { assertError, uniqueKey } from './helpers.js';

const WAIT_MS = 1000;

describe('a wait committed under the next leader (3 real nodes)', { timeout: 180_000 }, () => {
  let h: ClusterHarness;
  let ids: string[];

  const post = (id: string, path: string, body?: unknown, key?: string): Promise<HarnessResponse> =>
    h.request(id, 'POST', path, body, key ? { 'idempotency-key': key } : {});

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, 600], session: { default_ttl_ms: 120_000 } });
    ids = h.nodes.map((n) => n.id);
    h.startAll();
    await h.waitForLeader();
  });
  after(async () => {
    if (h) for (const id of ids) h.resume(id);
    await h?.close();
  });

  /** the leader's last log index (each member's match + lag) */
  async function lastIndex(leader: string): Promise<number> {
    const v = await h.view(leader);
    return Math.max(...v.members.map((m) => (m.match_index ?? 0) + (m.lag ?? 0)));
  }

  /**
   * Followers stopped, the acquire proposed on the leader, the leader stopped once the
   * entry is in its log (the followers' sockets hold the append), the followers resumed.
   * Returns the old leader and the pending answer, or null when the leader stepped down
   * (check-quorum) before it took the acquire: the caller tries again.
   */
  async function proposeThenDepose(sessionId: string, key: string): Promise<{ old: string; answer: Promise<HarnessResponse>; sentAt: number } | null> {
    const leader = await h.waitForLeader();
    const followers = ids.filter((id) => id !== leader);
    const before = await lastIndex(leader);
    for (const f of followers) h.pause(f);
    const sentAt = Date.now();
    const answer = post(leader, '/v1/locks/L/acquire', { session_id: sessionId, wait_ms: WAIT_MS }, key);
    try {
      // the entry is in the leader's log (nothing else is proposed meanwhile)
      await eventually(async () => (await lastIndex(leader)) > before, 400, 'the acquire in the leader\'s log');
      // two more round trips through its event loop: the Ready that appended it has sent it
      await h.view(leader);
      await h.view(leader);
    } catch {
      for (const f of followers) h.resume(f);
      const r = await answer;
      assert.ok(r.status === 503 || r.status === 504, `an acquire at a leader that lost its quorum: ${r.status} ${r.text}`);
      return null;
    }
    h.pause(leader);
    for (const f of followers) h.resume(f);
    return { old: leader, answer, sentAt };
  }

  it('is cancelled by the new leader after wait_ms, and a later release does not hand the lock to it', async (t) => {
    const leader = await h.waitForLeader();
    const a = await post(leader, '/v1/locks/L/acquire', { ttl_ms: 120_000 });
    assert.equal(a.status, 200, a.text);
    const b = await post(leader, '/v1/sessions', { ttl_ms: 120_000 });
    assert.equal(b.status, 201, b.text);
    const bid = b.body.session_id as string;
    const key = uniqueKey('wait');

    let run: Awaited<ReturnType<typeof proposeThenDepose>> = null;
    for (let attempt = 0; attempt < 5 && run === null; attempt++) run = await proposeThenDepose(bid, key);
    assert.ok(run, 'the leader kept stepping down before it took the acquire');
    const followers = ids.filter((id) => id !== run!.old);

    // the followers elect one of themselves; its first entry commits the acquire
    const next = await h.waitForLeader(30_000, followers);
    const resumed = Date.now();
    h.resume(run.old);
    const answer = await run.answer;
    t.diagnostic(`old leader ${run.old}, new leader ${next}; the client was answered ${answer.status} ${answer.text.slice(0, 160)}`);
    // The entry applied as a wait on the old leader, which no longer leads: 504. Which of
    // two true answers it gives depends on what the resumed leader reads first: the new
    // term ("…while the acquire was queued", it applies the entry as a follower), or its
    // followers' acks of the append, sent before they elected (it commits the entry in its
    // own term, starts waiting as leader, then steps down: "…while waiting", lock-service.ts
    // waitForGrant). Either way the wait is committed and only a lessor can end it.
    assertError(answer, 504, 'timeout', 'the acquire whose leader was deposed');
    assert.match(answer.body.error.message, /leadership changed while (the acquire was queued|waiting)/, 'the old leader applied it as a wait (it did commit)');

    // the wait ends by wait_ms: the new leader's lessor cancels it
    await eventually(async () => {
      const l = await h.request(next, 'GET', '/v1/locks/L');
      return l.status === 200 && l.body.waiters === 0; // b is the only session that waits for L
    }, WAIT_MS + 10_000, 'the wait to be cancelled');
    const cancelledBy = Date.now();
    t.diagnostic(`wait cancelled ${cancelledBy - run.sentAt} ms after the request was sent (${cancelledBy - resumed} ms after the old leader resumed)`);
    assert.ok(cancelledBy - run.sentAt >= WAIT_MS, 'never early');

    // the holder releases: nobody gets the lock
    const rel = await post(next, '/v1/locks/L/release', { session_id: a.body.session_id });
    assert.equal(rel.status, 200, rel.text);
    const l = await h.request(next, 'GET', '/v1/locks/L');
    assert.equal(l.status, 200, l.text);
    assert.equal(l.body.held, false, `the lock went to ${JSON.stringify(l.body.holder)} (session ${bid} stopped waiting at ${WAIT_MS} ms)`);
    const s = await h.request(next, 'GET', `/v1/sessions/${bid}`);
    assert.equal(s.status, 200, s.text);
    assert.deepEqual(s.body.locks, []);
  });
});
