// Sessions and their TTLs through the real lessor of a running 3-node cluster (docs/contract.md §3
// "Locks", "TTL semantics"): a session that stops renewing expires — never early, never much late —
// and its locks go to the waiters; keepalives keep a session alive across many TTLs; a lock
// freed by expiry stays unavailable for lock_delay_ms, then passes to the next waiter.
// Timing bounds are measured from the client's side: "never early" counts from when the
// client SENT its last acknowledged request, as the contract does.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, eventually, type HarnessResponse } from '../support/cluster-harness.js';
import { TokenWitness, assertError } from './helpers.js';

const ELECTION_MAX_MS = 600;
/** scheduling slack on a loaded 2-core machine running 3 nodes */
const SLACK_MS = 1500;

describe('session TTLs through the real lessor (3 real nodes)', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  let ids: string[];
  const tokens = new TokenWitness();

  const post = (id: string, path: string, body?: unknown): Promise<HarnessResponse> => h.request(id, 'POST', path, body);
  const get = (id: string, path: string): Promise<HarnessResponse> => h.request(id, 'GET', path);

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, ELECTION_MAX_MS], session: { default_ttl_ms: 60_000, min_ttl_ms: 100 } });
    ids = h.nodes.map((n) => n.id);
    h.startAll();
    await h.waitForLeader();
  });
  after(async () => {
    await h?.close();
  });

  it('a session with no keepalives expires after its TTL (not before): its locks are freed and a waiter is granted', async (t) => {
    const ttl = 800;
    const sent = Date.now();
    const a = await post('n1', '/v1/locks/exp/a/acquire', { ttl_ms: ttl, owner: 'short-lived' });
    assert.equal(a.status, 200, a.text);
    tokens.grant(a.body.fencing_token, 'exp/a');
    const sid = a.body.session_id as string;
    // b's acquire renews the session: the last acknowledged renewal, sent at lastSent
    const lastSent = Date.now();
    const b = await post('n2', '/v1/locks/exp/b/acquire', { session_id: sid });
    assert.equal(b.status, 200, b.text);
    tokens.grant(b.body.fencing_token, 'exp/b');

    // a waiter through a third node, with its own long session
    const w = await post('n3', '/v1/sessions', { ttl_ms: 60_000 });
    const waiter = post('n3', '/v1/locks/exp/a/acquire', { session_id: w.body.session_id, wait_ms: 20_000 });
    const granted = await waiter;
    const grantedAt = Date.now();
    assert.equal(granted.status, 200, granted.text);
    assert.equal(granted.body.session_id, w.body.session_id);
    tokens.grant(granted.body.fencing_token, 'exp/a after expiry');
    t.diagnostic(`ttl ${ttl} ms: the waiter was granted ${grantedAt - lastSent} ms after the holder's last renewal was sent`);

    // never early: not before ttl after the client SENT its last acknowledged renewal
    assert.ok(grantedAt - lastSent >= ttl, `granted ${grantedAt - lastSent} ms after the holder's last renewal was sent: earlier than its TTL ${ttl}`);
    assert.ok(grantedAt - sent >= ttl);
    // never (much) late: TTL + one election timeout after the last renewal, plus scheduling
    assert.ok(grantedAt - lastSent <= ttl + ELECTION_MAX_MS + SLACK_MS, `granted ${grantedAt - lastSent} ms after the last renewal`);

    // every lock of the expired session is free, and the session is gone, on every node
    for (const id of ids) {
      assertError(await get(id, `/v1/sessions/${sid}`), 404, 'session_not_found', `expired session via ${id}`);
      assert.deepEqual((await get(id, '/v1/locks/exp/b')).body, { name: 'exp/b', held: false, waiters: 0 });
      assert.equal((await get(id, '/v1/locks/exp/a')).body.holder.session_id, w.body.session_id);
    }
    assertError(await post('n1', `/v1/sessions/${sid}/keepalive`), 404, 'session_not_found');
    assertError(await post('n1', '/v1/locks/exp/b/renew', { session_id: sid }), 404, 'session_not_found');
  });

  it('keepalives (through every node in turn) keep a session and its lock alive for many TTLs; then it expires', async () => {
    const ttl = 500;
    const a = await post('n2', '/v1/locks/ka/a/acquire', { ttl_ms: ttl });
    assert.equal(a.status, 200, a.text);
    const token = tokens.grant(a.body.fencing_token, 'ka/a');
    const sid = a.body.session_id as string;
    const start = Date.now();
    let i = 0;
    let lastSent = start;
    while (Date.now() - start < 5 * ttl) {
      lastSent = Date.now();
      const via = ids[i++ % ids.length]!;
      // alternate keepalive and renew: both renew the session
      const r = i % 2 === 0 ? await post(via, `/v1/sessions/${sid}/keepalive`) : await post(via, '/v1/locks/ka/a/renew', { session_id: sid });
      assert.equal(r.status, 200, `renewal ${i} via ${via}, ${Date.now() - start} ms in: ${r.text}`);
      await new Promise((res) => setTimeout(res, ttl / 5)); // the pace of a client renewing early
    }
    const g = await get('n1', '/v1/locks/ka/a');
    assert.equal(g.body.holder.session_id, sid);
    assert.equal(g.body.holder.fencing_token, token);
    // stop renewing: it goes, within TTL + an election timeout (+ scheduling)
    await eventually(async () => (await get('n3', `/v1/sessions/${sid}`)).status === 404, ttl + ELECTION_MAX_MS + SLACK_MS + 2000, 'the session to expire');
    const goneAfter = Date.now() - lastSent;
    assert.ok(goneAfter >= ttl, `expired ${goneAfter} ms after the last renewal was sent, before its TTL`);
    assert.equal((await get('n1', '/v1/locks/ka/a')).body.held, false);
  });

  it('lock-delay: a lock freed by expiry stays unavailable for lock_delay_ms, then the next waiter gets it', async (t) => {
    const ttl = 400;
    const lockDelay = 1500;
    const s = await post('n1', '/v1/sessions', { ttl_ms: ttl, lock_delay_ms: lockDelay });
    assert.equal(s.status, 201, s.text);
    const sid = s.body.session_id as string;
    const a = await post('n1', '/v1/locks/delay/a/acquire', { session_id: sid });
    assert.equal(a.status, 200, a.text);
    tokens.grant(a.body.fencing_token, 'delay/a');

    const w = await post('n2', '/v1/sessions', { ttl_ms: 60_000 });
    let grantedAt = 0;
    const waiter = post('n2', '/v1/locks/delay/a/acquire', { session_id: w.body.session_id, wait_ms: 20_000 }).then((r) => {
      grantedAt = Date.now();
      return r;
    });

    // watch the expiry happen: the session disappears, the lock is not held, not granted yet
    await eventually(async () => (await get('n3', `/v1/sessions/${sid}`)).status === 404, ttl + ELECTION_MAX_MS + SLACK_MS + 2000, 'the session to expire');
    const expiredSeen = Date.now();
    const during = await get('n3', '/v1/locks/delay/a');
    if (grantedAt === 0) {
      assert.equal(during.body.held, false, `in lock-delay the lock has no holder: ${during.text}`);
      // nobody can take it during the delay, not even a fresh session with no queue to join
      const grab = await post('n3', '/v1/locks/delay/a/acquire', {});
      assertError(grab, 409, 'lock_held', 'acquire during lock-delay');
    }
    const granted = await waiter;
    assert.equal(granted.status, 200, granted.text);
    assert.equal(granted.body.session_id, w.body.session_id, 'the waiter, not the late grabber, gets it');
    tokens.grant(granted.body.fencing_token, 'delay/a after lock-delay');
    // the expiry happened at most one poll before expiredSeen
    const delayed = grantedAt - expiredSeen;
    t.diagnostic(`lock_delay_ms ${lockDelay}: the waiter was granted ${delayed} ms after the expiry was seen`);
    assert.ok(delayed >= lockDelay - 300, `granted ${delayed} ms after the expiry was seen; lock-delay is ${lockDelay}`);
    assert.ok(delayed <= lockDelay + SLACK_MS + 1000, `granted ${delayed} ms after the expiry was seen`);
  });

  it('an explicit release is not delayed, even for a session with lock_delay_ms', async () => {
    const s = await post('n3', '/v1/sessions', { ttl_ms: 60_000, lock_delay_ms: 5000 });
    const sid = s.body.session_id as string;
    const a = await post('n3', '/v1/locks/delay/b/acquire', { session_id: sid });
    assert.equal(a.status, 200, a.text);
    tokens.grant(a.body.fencing_token, 'delay/b');
    const w = await post('n1', '/v1/sessions', { ttl_ms: 60_000 });
    const waiter = post('n1', '/v1/locks/delay/b/acquire', { session_id: w.body.session_id, wait_ms: 20_000 });
    await eventually(async () => (await get('n1', '/v1/locks/delay/b')).body.waiters === 1, 5000, 'the waiter to queue');
    const t0 = Date.now();
    assert.equal((await post('n2', '/v1/locks/delay/b/release', { session_id: sid })).status, 200);
    const granted = await waiter;
    assert.equal(granted.status, 200, granted.text);
    tokens.grant(granted.body.fencing_token, 'delay/b after release');
    assert.ok(Date.now() - t0 < 2000, `granted ${Date.now() - t0} ms after an explicit release`);
    // closing a session is explicit too: its locks are free at once
    const c = await h.request('n2', 'DELETE', `/v1/sessions/${sid}`);
    assert.equal(c.status, 200, c.text);
    const ws = w.body.session_id as string;
    const t1 = Date.now();
    assert.deepEqual((await h.request('n2', 'DELETE', `/v1/sessions/${ws}`)).body, { released: ['delay/b'] });
    const next = await post('n2', '/v1/locks/delay/b/acquire', {});
    assert.equal(next.status, 200, `acquire right after close: ${next.text}`);
    tokens.grant(next.body.fencing_token, 'delay/b after close');
    assert.ok(Date.now() - t1 < 2000);
  });

  it('a waiting acquire keeps its own session alive while it waits', async () => {
    const holder = await post('n1', '/v1/locks/wait-alive/acquire', { ttl_ms: 60_000 });
    assert.equal(holder.status, 200, holder.text);
    tokens.grant(holder.body.fencing_token, 'wait-alive');
    const w = await post('n2', '/v1/sessions', { ttl_ms: 300 });
    const ws = w.body.session_id as string;
    const waiter = post('n3', '/v1/locks/wait-alive/acquire', { session_id: ws, wait_ms: 20_000 });
    await eventually(async () => (await get('n1', '/v1/locks/wait-alive')).body.waiters === 1, 5000, 'the waiter to queue');
    // let several of the waiter's TTLs pass (the elapsed time IS the test, not a wait for a condition)
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await get('n1', `/v1/sessions/${ws}`)).status, 200, 'the waiting session is still alive');
    assert.equal((await post('n1', '/v1/locks/wait-alive/release', { session_id: holder.body.session_id })).status, 200);
    const granted = await waiter;
    assert.equal(granted.status, 200, granted.text);
    assert.equal(granted.body.session_id, ws);
    tokens.grant(granted.body.fencing_token, 'wait-alive waiter');
  });
});
