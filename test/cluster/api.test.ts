// The REST contract against a real 3-node cluster (docs/contract.md §3 "REST API"): every
// request through EVERY node (followers forward to the leader), Idempotency-Key retries,
// FIFO waiters across nodes, wait_ms timeouts, readiness, metrics, the cluster view and
// leadership transfer. One cluster serves the whole file: the scenarios use disjoint lock
// names and sessions, and sessions live 2 minutes so none expires behind a test's back.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, eventually, type HarnessResponse } from '../support/cluster-harness.js';
import { CONTRACT_METRICS, TokenWitness, assertError, gauge, parsePrometheus, uniqueKey } from './helpers.js';

describe('REST API through every node of a real 3-node cluster', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  let ids: string[];
  const tokens = new TokenWitness();

  const post = (id: string, path: string, body?: unknown, key?: string): Promise<HarnessResponse> =>
    h.request(id, 'POST', path, body, key ? { 'idempotency-key': key } : {});
  const get = (id: string, path: string): Promise<HarnessResponse> => h.request(id, 'GET', path);
  const leader = (): Promise<string> => h.waitForLeader(10_000);
  const followers = async (): Promise<string[]> => {
    const l = await leader();
    return ids.filter((x) => x !== l);
  };

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3, session: { default_ttl_ms: 120_000 } });
    ids = h.nodes.map((n) => n.id);
  });
  after(async () => {
    await h?.close();
  });

  it('/readyz is 503 until a leader is known, then 200 on every node; /healthz is 200 throughout', async () => {
    // One node of three can never elect a leader: it serves, but is not ready.
    h.start('n1');
    await eventually(async () => (await get('n1', '/healthz')).status === 200, 15_000, 'n1 to serve /healthz');
    assertError(await get('n1', '/readyz'), 503, 'unavailable', 'readyz without a leader');
    const alone = await h.view('n1');
    assert.equal(alone.leader_id, null);
    assert.notEqual(alone.role, 'leader');
    // A write with no leader: 503 + Retry-After, nothing applied.
    assertError(await post('n1', '/v1/locks/no-leader/acquire', {}), 503, 'unavailable', 'acquire without a leader');
    assertError(await post('n1', '/v1/sessions', {}), 503, 'unavailable', 'open session without a leader');

    h.start('n2');
    h.start('n3');
    const l = await h.waitForLeader();
    assert.ok(ids.includes(l));
    await eventually(async () => {
      const rs = await Promise.all(ids.map((id) => get(id, '/readyz')));
      return rs.every((r) => r.status === 200);
    }, 10_000, 'every node to be ready');
    for (const id of ids) assert.equal((await get(id, '/healthz')).status, 200);
    // nothing was applied by the refused requests
    const lk = await get('n1', '/v1/locks/no-leader');
    assert.equal(lk.status, 200);
    assert.equal(lk.body.held, false);
  });

  it('GET /v1/cluster has the contract shape on every node, and they agree', async () => {
    // Right after an election a follower may not have heard the leader's commit index yet
    // (commit_index 0 on a loaded machine): wait until every node has, then check the shape.
    const { l, views } = await eventually(async () => {
      const l = await leader();
      const views = await Promise.all(ids.map((id) => h.view(id)));
      const settled = views.every((v) => v.leader_id === l && v.commit_index >= 1 && v.term === views[0]!.term);
      return settled ? { l, views } : null;
    }, 15_000, 'every node to know the leader and a commit index >= 1 in one term');
    for (const [i, v] of views.entries()) {
      assert.equal(v.node_id, ids[i]);
      assert.equal(v.role, v.node_id === l ? 'leader' : 'follower');
      assert.equal(v.leader_id, l);
      assert.ok(Number.isInteger(v.term) && v.term >= 1);
      assert.ok(Number.isInteger(v.commit_index) && v.commit_index >= 1);
      assert.ok(Number.isInteger(v.applied_index) && v.applied_index <= v.commit_index);
      assert.deepEqual(v.members.map((m) => m.id).sort(), [...ids].sort());
      for (const m of v.members) {
        const n = h.node(m.id);
        assert.equal(m.api, n.api);
        assert.equal(m.peer, n.peer);
        assert.equal(m.role, m.id === l ? 'leader' : 'follower');
      }
    }
    // the leader knows its followers' match indexes
    const lv = views.find((v) => v.node_id === l)!;
    for (const m of lv.members.filter((x) => x.id !== l)) assert.ok(Number.isInteger(m.match_index), `match_index of ${m.id}`);
    assert.equal(new Set(views.map((v) => v.term)).size, 1);
  });

  it('sessions open / keepalive / get / close through every node', async () => {
    for (const via of ids) {
      const open = await post(via, '/v1/sessions', { ttl_ms: 60_000, owner: `owner-${via}` });
      assert.equal(open.status, 201, open.text);
      const sid = open.body.session_id as string;
      assert.match(sid, /^[A-Za-z0-9._~-]{1,128}$/);
      assert.equal(open.body.ttl_ms, 60_000);
      for (const other of ids) {
        const ka = await post(other, `/v1/sessions/${sid}/keepalive`);
        assert.equal(ka.status, 200, ka.text);
        // the contract's fields, and this version's extension: the grants the session holds (docs/api.md "Keepalive answers")
        assert.deepEqual(ka.body, { session_id: sid, ttl_ms: 60_000, grants: [] });
        const g = await get(other, `/v1/sessions/${sid}`);
        assert.equal(g.status, 200, g.text);
        assert.deepEqual(g.body, { session_id: sid, owner: `owner-${via}`, ttl_ms: 60_000, locks: [] });
      }
      const lk = await post(via, `/v1/locks/sess-${via}/acquire`, { session_id: sid });
      assert.equal(lk.status, 200, lk.text);
      tokens.grant(lk.body.fencing_token, `sess-${via}`);
      assert.deepEqual((await get(via, `/v1/sessions/${sid}`)).body.locks, [`sess-${via}`]);
      const closer = ids[(ids.indexOf(via) + 1) % ids.length]!;
      const del = await h.request(closer, 'DELETE', `/v1/sessions/${sid}`);
      assert.equal(del.status, 200, del.text);
      assert.deepEqual(del.body, { released: [`sess-${via}`] });
      for (const other of ids) {
        assertError(await get(other, `/v1/sessions/${sid}`), 404, 'session_not_found', `get closed session via ${other}`);
        assertError(await post(other, `/v1/sessions/${sid}/keepalive`), 404, 'session_not_found', `keepalive closed session via ${other}`);
      }
      assert.equal((await get(via, `/v1/locks/sess-${via}`)).body.held, false);
    }
  });

  it('acquire / get / list / check / renew / release through every node', async () => {
    for (const via of ids) {
      const name = `every/${via}`;
      const acq = await post(via, `/v1/locks/${name}/acquire`, { ttl_ms: 60_000, owner: `o-${via}` });
      assert.equal(acq.status, 200, acq.text);
      assert.equal(acq.body.name, name);
      assert.equal(acq.body.ttl_ms, 60_000);
      const sid = acq.body.session_id as string;
      const token = tokens.grant(acq.body.fencing_token, name);

      for (const other of ids) {
        const g = await get(other, `/v1/locks/${name}`);
        assert.equal(g.status, 200, g.text);
        const hv = { session_id: sid, owner: `o-${via}`, fencing_token: token };
        assert.deepEqual(g.body, { name, held: true, holder: hv, waiters: 0, mode: 'exclusive', holders: [{ ...hv, mode: 'exclusive' }] });
        const stale = await get(other, `/v1/locks/${name}?consistency=stale`);
        assert.equal(stale.status, 200);
        // a follower's stale view may lag, but never shows another holder
        if (stale.body.held) assert.equal(stale.body.holder.fencing_token, token);
        const chk = await get(other, `/v1/locks/${name}/check?fencing_token=${token}`);
        assert.deepEqual(chk.body, { name, current: true });
        const old = await get(other, `/v1/locks/${name}/check?fencing_token=${token - 1}`);
        assert.deepEqual(old.body, { name, current: false });
        const ren = await post(other, `/v1/locks/${name}/renew`, { session_id: sid });
        assert.equal(ren.status, 200, ren.text);
        assert.deepEqual(ren.body, { name, session_id: sid, fencing_token: token, ttl_ms: 60_000 });
        const list = await get(other, '/v1/locks?prefix=every/');
        assert.equal(list.status, 200);
        assert.ok(list.body.locks.some((x: { name: string }) => x.name === name), list.text);
      }
      // acquiring a lock the session already holds returns the same token
      const again = await post(via, `/v1/locks/${name}/acquire`, { session_id: sid });
      assert.equal(again.body.fencing_token, token);
      // another session: 409 with the holder
      const other = await post(via, `/v1/locks/${name}/acquire`, {});
      assertError(other, 409, 'lock_held');
      assert.equal(other.body.error.holder.session_id, sid);
      assert.equal(other.body.error.holder.fencing_token, token);
      // a stale token cannot release
      assertError(await post(via, `/v1/locks/${name}/release`, { session_id: sid, fencing_token: token - 1 }), 409, 'not_holder');

      const rel = await post(ids[(ids.indexOf(via) + 2) % ids.length]!, `/v1/locks/${name}/release`, { session_id: sid, fencing_token: token });
      assert.equal(rel.status, 200, rel.text);
      assert.deepEqual(rel.body, { name, released: true });
      for (const o of ids) {
        assert.deepEqual((await get(o, `/v1/locks/${name}`)).body, { name, held: false, waiters: 0 });
        assert.deepEqual((await get(o, `/v1/locks/${name}/check?fencing_token=${token}`)).body, { name, current: false });
      }
      assertError(await post(via, `/v1/locks/${name}/renew`, { session_id: sid }), 409, 'not_holder');
      assertError(await post(via, `/v1/locks/${name}/release`, { session_id: sid }), 409, 'not_holder');
    }
    const list = await get('n2', '/v1/locks?prefix=every/');
    assert.deepEqual(list.body, { locks: [] });
  });

  it('a "/" in a lock name may be sent raw or as %2F: one lock either way', async () => {
    const a = await post('n1', '/v1/locks/slash/a/b/acquire', {});
    assert.equal(a.status, 200, a.text);
    assert.equal(a.body.name, 'slash/a/b');
    tokens.grant(a.body.fencing_token, 'slash/a/b');
    for (const id of ids) {
      const g = await get(id, '/v1/locks/slash%2Fa%2Fb');
      assert.equal(g.body.holder?.fencing_token, a.body.fencing_token, `via ${id}`);
    }
    assertError(await post('n2', '/v1/locks/slash%2Fa/b/acquire', {}), 409, 'lock_held');
    const rel = await post('n3', '/v1/locks/slash%2Fa%2Fb/release', { session_id: a.body.session_id });
    assert.equal(rel.status, 200, rel.text);
    assert.equal((await get('n1', '/v1/locks/slash/a/b')).body.held, false);
  });

  it('Idempotency-Key: a retried acquire / open / release returns the first answer and changes nothing twice', async () => {
    const [f1, f2] = await followers();
    const l = await leader();
    // the gauges read the state at the scrape (src/metrics.ts readStateFrom), and the leader
    // has applied every write it answered: no waiting for a tick, here or below
    const before = await gauge(h, l, 'raftlock_sessions_active');

    // acquire without a session: opens one; retries through other nodes get the same answer
    const key = uniqueKey('acq');
    const first = await post(f1!, '/v1/locks/idem/a/acquire', { ttl_ms: 60_000 }, key);
    assert.equal(first.status, 200, first.text);
    const token = tokens.grant(first.body.fencing_token, 'idem/a');
    for (const via of [f2!, l, f1!]) {
      const retry = await post(via, '/v1/locks/idem/a/acquire', { ttl_ms: 60_000 }, key);
      assert.equal(retry.status, 200, retry.text);
      assert.deepEqual(retry.body, first.body, `retry via ${via}`);
    }
    // the lock is held once, by the first session, with the first token
    const g = await get(l, '/v1/locks/idem/a');
    assert.equal(g.body.holder.session_id, first.body.session_id);
    assert.equal(g.body.holder.fencing_token, token);
    // a different key is a different request
    assertError(await post(f2!, '/v1/locks/idem/a/acquire', { ttl_ms: 60_000 }, uniqueKey('acq')), 409, 'lock_held');

    // open session: the same session id each time
    const okey = uniqueKey('open');
    const o1 = await post(f2!, '/v1/sessions', { ttl_ms: 60_000 }, okey);
    assert.equal(o1.status, 201, o1.text);
    for (const via of ids) {
      const o2 = await post(via, '/v1/sessions', { ttl_ms: 60_000 }, okey);
      assert.equal(o2.status, 201, o2.text);
      assert.deepEqual(o2.body, o1.body);
    }
    // one session from the acquire, one from the open: not one per try
    assert.equal(await gauge(h, l, 'raftlock_sessions_active'), before + 2);

    // release: the retry answers like the first try instead of not_holder
    const rkey = uniqueKey('rel');
    const r1 = await post(f1!, '/v1/locks/idem/a/release', { session_id: first.body.session_id }, rkey);
    assert.deepEqual(r1.body, { name: 'idem/a', released: true });
    const r2 = await post(f2!, '/v1/locks/idem/a/release', { session_id: first.body.session_id }, rkey);
    assert.equal(r2.status, 200, r2.text);
    assert.deepEqual(r2.body, r1.body);
    // without the key, a second release is refused
    assertError(await post(f2!, '/v1/locks/idem/a/release', { session_id: first.body.session_id }), 409, 'not_holder');
  });

  it('Idempotency-Key bound to its request: acquire B with A\'s key is 422 through a follower and the leader, release with an acquire\'s key is 422 (not 500), nothing applied', async () => {
    const [f1] = await followers();
    const l = await leader();
    const key = uniqueKey('bound');
    const a = await post(f1!, '/v1/locks/bound/a/acquire', { ttl_ms: 60_000 }, key);
    assert.equal(a.status, 200, a.text);
    tokens.grant(a.body.fencing_token, 'bound/a');
    // the same key for lock B: before, 200 naming B with A's token (two grants, one token)
    for (const via of [f1!, l]) {
      const b = await post(via, '/v1/locks/bound/b/acquire', { ttl_ms: 60_000 }, key);
      assertError(b, 422, 'idempotency_key_reused', `acquire B with A's key via ${via}`);
      assert.deepEqual(Object.keys(b.body.error).sort(), ['code', 'message'], 'the contract\'s error shape');
      assert.ok(!b.text.includes(a.body.session_id), 'the answer names nothing of the first request');
    }
    const gb = await get(l, '/v1/locks/bound/b');
    assert.equal(gb.body.held, false, 'B was not acquired');
    // the same key and body for A is still a retry, wherever it is sent
    const again = await post(l, '/v1/locks/bound/a/acquire', { ttl_ms: 60_000 }, key);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, a.body);
    // and with another body it is not
    assertError(await post(f1!, '/v1/locks/bound/a/acquire', { ttl_ms: 30_000 }, key), 422, 'idempotency_key_reused', 'another ttl');
    // release with the acquire's key: before, 500 internal "unexpected result acquired"
    for (const via of [f1!, l]) assertError(await post(via, '/v1/locks/bound/a/release', { session_id: a.body.session_id }, key), 422, 'idempotency_key_reused', `release via ${via}`);
    const ga = await get(l, '/v1/locks/bound/a');
    assert.equal(ga.body.holder.session_id, a.body.session_id, 'A is still held');
    assert.equal(ga.body.holder.fencing_token, a.body.fencing_token);
    const r = await post(f1!, '/v1/locks/bound/a/release', { session_id: a.body.session_id }, uniqueKey('rel'));
    assert.deepEqual(r.body, { name: 'bound/a', released: true });
  });

  it('FIFO waiters across nodes get the lock in arrival order, with increasing fencing tokens', async () => {
    const name = 'fifo/x';
    const holder = await post('n1', `/v1/locks/${name}/acquire`, {});
    assert.equal(holder.status, 200, holder.text);
    tokens.grant(holder.body.fencing_token, `${name} holder`);

    // three clients, each through a different node, each with its own session
    const clients: { via: string; sid: string; res?: Promise<HarnessResponse> }[] = [];
    for (const via of ids) {
      const s = await post(via, '/v1/sessions', {});
      assert.equal(s.status, 201, s.text);
      clients.push({ via, sid: s.body.session_id });
    }
    const done: string[] = [];
    for (const [i, c] of clients.entries()) {
      c.res = post(c.via, `/v1/locks/${name}/acquire`, { session_id: c.sid, wait_ms: 30_000 }).then((r) => {
        done.push(c.sid);
        return r;
      });
      // arrival order is what the queue promises: let each join before the next one asks
      await eventually(async () => (await get('n1', `/v1/locks/${name}`)).body.waiters === i + 1, 10_000, `${i + 1} waiters on ${name}`);
    }
    assert.deepEqual(done, [], 'nobody is granted while the holder holds');

    let prev = { sid: holder.body.session_id as string, token: holder.body.fencing_token as number };
    for (const [i, c] of clients.entries()) {
      const rel = await post(ids[i]!, `/v1/locks/${name}/release`, { session_id: prev.sid, fencing_token: prev.token });
      assert.equal(rel.status, 200, rel.text);
      const r = await c.res!;
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.session_id, c.sid, `waiter ${i} is granted in arrival order`);
      tokens.grant(r.body.fencing_token, `${name} waiter ${i}`);
      assert.ok(r.body.fencing_token > prev.token);
      // exactly one more request finished, and the rest are still queued
      assert.deepEqual(done, clients.slice(0, i + 1).map((x) => x.sid));
      const g = await get(c.via, `/v1/locks/${name}`);
      assert.equal(g.body.holder.session_id, c.sid);
      assert.equal(g.body.waiters, clients.length - i - 1);
      prev = { sid: c.sid, token: r.body.fencing_token };
    }
    assert.equal((await post('n3', `/v1/locks/${name}/release`, { session_id: prev.sid })).status, 200);
  });

  it('wait_ms running out answers 409 lock_held with the holder, and leaves the queue', async () => {
    const name = 'fifo/timeout';
    const holder = await post('n2', `/v1/locks/${name}/acquire`, { owner: 'the-holder' });
    assert.equal(holder.status, 200, holder.text);
    tokens.grant(holder.body.fencing_token, name);
    for (const via of ids) {
      const t0 = Date.now();
      const r = await post(via, `/v1/locks/${name}/acquire`, { wait_ms: 600 });
      const took = Date.now() - t0;
      assertError(r, 409, 'lock_held', `wait through ${via}`);
      assert.deepEqual(r.body.error.holder, { session_id: holder.body.session_id, owner: 'the-holder', fencing_token: holder.body.fencing_token });
      assert.ok(took >= 600, `answered after ${took} ms, before wait_ms ran out`);
      assert.ok(took < 600 + 5000, `answered after ${took} ms`);
    }
    await eventually(async () => (await get('n1', `/v1/locks/${name}`)).body.waiters === 0, 5000, 'the timed-out waiters to leave the queue');
    // the lock is still the holder's, and passes straight to a new request after release
    await post('n2', `/v1/locks/${name}/release`, { session_id: holder.body.session_id });
    const next = await post('n3', `/v1/locks/${name}/acquire`, {});
    assert.equal(next.status, 200, next.text);
    tokens.grant(next.body.fencing_token, `${name} next`);
  });

  it('/metrics on every node is valid Prometheus text with every contract metric', async () => {
    const l = await leader();
    for (const id of ids) {
      const r = await get(id, '/metrics');
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
      const { types, samples } = parsePrometheus(r.text);
      for (const name of CONTRACT_METRICS) assert.ok(types.has(name), `${id}: metric ${name} missing`);
      assert.equal(types.get('raftlock_raft_commit_latency_seconds'), 'histogram');
      assert.equal(types.get('raftlock_storage_sync_seconds'), 'histogram');
      assert.equal(types.get('raftlock_lock_wait_seconds'), 'histogram');
      assert.equal(types.get('raftlock_http_request_duration_seconds'), 'histogram');
      assert.ok(types.has('process_cpu_user_seconds_total'), 'default process metrics');
      const val = (n: string): number | undefined => samples.find((s) => s.name === n && Object.keys(s.labels).length === 0)?.value;
      assert.equal(val('raftlock_raft_is_leader'), id === l ? 1 : 0);
      assert.ok((val('raftlock_raft_term') ?? 0) >= 1);
      assert.ok((val('raftlock_raft_commit_index') ?? 0) > 0);
      assert.ok((val('raftlock_raft_leader_changes_total') ?? 0) >= 1);
      // HTTP metrics are labelled by route template, never by raw URL
      const http = samples.filter((s) => s.name === 'raftlock_http_request_duration_seconds_count');
      assert.ok(http.length > 0);
      for (const s of http) {
        assert.ok(s.labels.route && s.labels.method && s.labels.status_code, JSON.stringify(s.labels));
        assert.ok(!s.labels.route.includes('every/'), `raw URL in a route label: ${s.labels.route}`);
      }
      if (id === l) {
        const acq = samples.filter((s) => s.name === 'raftlock_lock_acquire_total');
        assert.ok(acq.some((s) => s.labels.result === 'acquired' && s.value > 0), 'acquire_total{result=acquired}');
        assert.ok(acq.some((s) => s.labels.result === 'lock_held' && s.value > 0), 'acquire_total{result=lock_held}');
        assert.ok(samples.some((s) => s.name === 'raftlock_raft_proposals_total' && s.value > 0));
        assert.ok((samples.find((s) => s.name === 'raftlock_raft_commit_latency_seconds_count')?.value ?? 0) > 0);
        assert.ok((samples.find((s) => s.name === 'raftlock_lock_wait_seconds_count')?.value ?? 0) > 0);
      }
      assert.ok((samples.find((s) => s.name === 'raftlock_storage_sync_seconds_count')?.value ?? 0) > 0, `${id}: storage syncs`);
    }
  });

  it('shared locks through a follower: readers coexist, a waiting writer blocks later readers, GET shows mode and holders, check follows each grant', async () => {
    const [f1, f2] = await followers();
    const r1 = await post(f1!, '/v1/locks/shared/doc/acquire', { mode: 'shared' });
    const r2 = await post(f2!, '/v1/locks/shared/doc/acquire', { mode: 'shared', owner: 'reader-2' });
    assert.equal(r1.status, 200, r1.text);
    assert.equal(r2.status, 200, r2.text);
    assert.equal(r1.body.mode, 'shared');
    assert.ok(r2.body.fencing_token > r1.body.fencing_token);
    tokens.grant(r1.body.fencing_token, 'shared/doc');
    tokens.grant(r2.body.fencing_token, 'shared/doc');
    const view = await get(f1!, '/v1/locks/shared/doc');
    assert.equal(view.body.mode, 'shared');
    assert.equal(view.body.holder, undefined, 'holder is for an exclusive holder only');
    assert.deepEqual(view.body.holders.map((x: { session_id: string; mode: string }) => [x.session_id, x.mode]), [[r1.body.session_id, 'shared'], [r2.body.session_id, 'shared']]);
    const writer = post(f1!, '/v1/locks/shared/doc/acquire', { wait_ms: 30_000 });
    await eventually(async () => (await get(f2!, '/v1/locks/shared/doc')).body.waiters === 1, 10_000, 'the writer to queue');
    assertError(await post(f2!, '/v1/locks/shared/doc/acquire', { mode: 'shared' }), 409, 'lock_held', 'a reader behind a waiting writer');
    assert.equal((await get(f2!, `/v1/locks/shared/doc/check?fencing_token=${r1.body.fencing_token}`)).body.current, true);
    assert.equal((await post(f2!, '/v1/locks/shared/doc/release', { session_id: r1.body.session_id })).status, 200);
    assert.equal((await get(f2!, `/v1/locks/shared/doc/check?fencing_token=${r1.body.fencing_token}`)).body.current, false, 'a released share no longer checks');
    assert.equal((await post(f1!, '/v1/locks/shared/doc/renew', { session_id: r2.body.session_id })).body.mode, 'shared');
    assert.equal((await post(f2!, '/v1/locks/shared/doc/release', { session_id: r2.body.session_id })).status, 200);
    const w = await writer;
    assert.equal(w.status, 200, w.text);
    assert.equal(w.body.mode, undefined);
    tokens.grant(w.body.fencing_token, 'shared/doc');
    assert.equal((await get(f2!, '/v1/locks/shared/doc')).body.mode, 'exclusive');
  });

  it('semaphores through followers: permits up to the limit, limit_mismatch, semaphore_full, FIFO waiters with positions, resize, release, metric', async () => {
    const [f1, f2] = await followers();
    const a = await post(f1!, '/v1/semaphores/pool/db/acquire', { limit: 2, owner: 'a' });
    assert.equal(a.status, 200, a.text);
    assert.deepEqual([a.body.permits, a.body.limit], [1, 2]);
    tokens.grant(a.body.fencing_token, 'pool/db');
    const b = await post(f2!, '/v1/semaphores/pool/db/acquire', { limit: 2, owner: 'b' });
    assert.equal(b.status, 200, b.text);
    tokens.grant(b.body.fencing_token, 'pool/db');
    const mismatch = await post(f2!, '/v1/semaphores/pool/db/acquire', { limit: 3 });
    assertError(mismatch, 409, 'limit_mismatch', 'another limit');
    assert.equal(mismatch.body.error.limit, 2);
    const fullErr = await post(f2!, '/v1/semaphores/pool/db/acquire', { limit: 2 });
    assertError(fullErr, 409, 'semaphore_full', 'no room, no wait');
    assert.deepEqual([fullErr.body.error.in_use, fullErr.body.error.limit], [2, 2]);
    assertError(await post(f2!, '/v1/semaphores/pool/db/acquire', { limit: 2, permits: 3 }), 400, 'invalid_request', 'permits over the limit');
    const c = post(f1!, '/v1/semaphores/pool/db/acquire', { limit: 2, wait_ms: 30_000, owner: 'c' });
    await eventually(async () => (await get(f2!, '/v1/semaphores/pool/db')).body.waiters?.length === 1, 10_000, 'c to queue');
    const view = await get(f2!, '/v1/semaphores/pool/db');
    assert.deepEqual([view.body.limit, view.body.in_use, view.body.holders.length], [2, 2, 2]);
    assert.deepEqual(view.body.waiters.map((w: { owner: string; position: number }) => [w.owner, w.position]), [['c', 1]]);
    assert.equal((await get(f1!, '/v1/semaphores/pool/db?consistency=stale')).status, 200);
    const l = await leader();
    assert.equal(await gauge(h, l, 'raftlock_semaphores_in_use'), 2);
    assert.equal((await post(f2!, '/v1/semaphores/pool/db/release', { session_id: a.body.session_id })).status, 200);
    const cg = await c;
    assert.equal(cg.status, 200, cg.text);
    tokens.grant(cg.body.fencing_token, 'pool/db');
    const resized = await h.request(f1!, 'PUT', '/v1/semaphores/pool/db/limit', { limit: 5 });
    assert.deepEqual(resized.body, { name: 'pool/db', limit: 5 });
    assert.equal((await get(f1!, '/v1/semaphores/pool/db')).body.limit, 5);
    assertError(await post(f1!, '/v1/semaphores/pool/db/release', { session_id: a.body.session_id }), 409, 'not_holder', 'a released session');

    // GET /v1/semaphores through a follower (relayed to the leader), and stale on it
    const d = await post(f2!, '/v1/semaphores/pool/db/acquire', { limit: 5, permits: 3, owner: 'd' });
    assert.equal(d.status, 200, d.text);
    tokens.grant(d.body.fencing_token, 'pool/db');
    const listed = await get(f1!, '/v1/semaphores?prefix=pool/');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.semaphores.map((s: { name: string; limit: number; in_use: number; holders: unknown[] }) => [s.name, s.limit, s.in_use, s.holders.length]), [['pool/db', 5, 5, 3]]);
    assert.equal((await get(f2!, '/v1/semaphores?prefix=pool/&consistency=stale&limit=1')).status, 200);
    // a session that waits and gives up: its release withdraws the wait (docs/api.md "Release")
    const e = await post(f1!, '/v1/sessions', { ttl_ms: 30_000 });
    const waitingE = post(f2!, '/v1/semaphores/pool/db/acquire', { session_id: e.body.session_id, limit: 5, wait_ms: 30_000 });
    await eventually(async () => (await get(f1!, '/v1/semaphores/pool/db')).body.waiters?.length === 1, 10_000, 'e to queue');
    assertError(await post(f1!, '/v1/semaphores/pool/db/release', { session_id: e.body.session_id }), 409, 'not_holder', 'a waiting session');
    assertError(await waitingE, 409, 'semaphore_full', 'the waiting request, withdrawn');
    assert.deepEqual((await get(f1!, '/v1/semaphores/pool/db')).body.waiters, []);
    assert.equal((await post(f1!, '/v1/semaphores/pool/db/release', { session_id: d.body.session_id })).status, 200);
    assert.equal((await get(f1!, '/v1/semaphores/pool/db')).body.in_use, 2, 'the permits d gave back went to nobody');
  });

  it('elections through followers: campaign, lock_held with the leader, FIFO succession on resign, proclaim, value limits, Idempotency-Key, linearizable read on every node, metric', async () => {
    const [f1, f2] = await followers();
    const a = await post(f1!, '/v1/elections/svc/primary/campaign', { value: 'http://a:1', owner: 'a' });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.body.name, 'svc/primary');
    assert.equal(a.body.value, 'http://a:1');
    assert.ok(Number.isInteger(a.body.ttl_ms));
    tokens.grant(a.body.fencing_token, 'svc/primary');
    const lost = await post(f2!, '/v1/elections/svc/primary/campaign', { value: 'http://b:1' });
    assertError(lost, 409, 'lock_held', 'campaign without wait');
    assert.deepEqual(lost.body.error.leader, { session_id: a.body.session_id, value: 'http://a:1', fencing_token: a.body.fencing_token });
    // a queued candidate, through the other follower
    const cKey = uniqueKey('campaign-c');
    const c = post(f2!, '/v1/elections/svc/primary/campaign', { value: 'http://c:1', wait_ms: 30_000 }, cKey);
    await eventually(async () => (await get(f1!, '/v1/locks/svc/primary')).body.waiters === 1, 10_000, 'c to queue');
    for (const id of ids) {
      const g = await get(id, '/v1/elections/svc/primary');
      assert.equal(g.status, 200, g.text);
      assert.deepEqual(g.body, { name: 'svc/primary', leader: { session_id: a.body.session_id, value: 'http://a:1', fencing_token: a.body.fencing_token } }, `via ${id}`);
    }
    // proclaim: the leader only; value up to 4 KiB of UTF-8 bytes
    const big = '€'.repeat(1365); // 4095 bytes
    const p = await post(f2!, '/v1/elections/svc/primary/proclaim', { session_id: a.body.session_id, value: big });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body, { name: 'svc/primary', value: big });
    const tooBig = await post(f1!, '/v1/elections/svc/primary/proclaim', { session_id: a.body.session_id, value: '€'.repeat(1366) });
    assertError(tooBig, 400, 'invalid_request', '4098 bytes');
    assert.match(tooBig.body.error.message, /value.*4096 bytes/);
    assertError(await post(f1!, '/v1/elections/svc/primary/campaign', {}), 400, 'invalid_request', 'campaign without a value');
    assertError(await post(f1!, '/v1/elections/svc/primary/campaign', { value: 'x', max_hold: 1 }), 400, 'invalid_request', 'an unknown field');
    assertError(await post(f1!, '/v1/elections/bad%20name/campaign', { value: 'x' }), 400, 'invalid_request', 'a bad election name');
    assertError(await get(f1!, '/v1/elections/svc/primary/campaign'), 404, 'not_found', 'GET of an action');
    const other = await post(f1!, '/v1/sessions', {});
    assertError(await post(f1!, '/v1/elections/svc/primary/proclaim', { session_id: other.body.session_id, value: 'x' }), 409, 'not_holder', 'proclaim by a non-leader');
    assertError(await post(f1!, '/v1/elections/svc/primary/resign', { session_id: other.body.session_id }), 409, 'not_holder', 'resign by a stranger');
    assert.equal((await get(f1!, '/v1/elections/svc/primary?consistency=stale')).status, 200);
    const l = await leader();
    assert.equal(await gauge(h, l, 'raftlock_elections_led'), 1);
    // resign: the next candidate leads, with its own value and a larger token
    const r = await post(f1!, '/v1/elections/svc/primary/resign', { session_id: a.body.session_id });
    assert.deepEqual(r.body, { name: 'svc/primary', resigned: true });
    const cg = await c;
    assert.equal(cg.status, 200, cg.text);
    assert.equal(cg.body.value, 'http://c:1');
    assert.ok(cg.body.fencing_token > a.body.fencing_token);
    tokens.grant(cg.body.fencing_token, 'svc/primary');
    // a retry with the same key answers the first answer
    const again = await post(f1!, '/v1/elections/svc/primary/campaign', { value: 'http://c:1', wait_ms: 30_000 }, cKey);
    assert.deepEqual(again.body, cg.body);
    assert.equal((await get(f1!, '/v1/elections/svc/primary')).body.leader.session_id, cg.body.session_id);
    // the session's end ends its leadership
    assert.equal((await h.request(f2!, 'DELETE', `/v1/sessions/${cg.body.session_id}`)).status, 200);
    assert.deepEqual((await get(f2!, '/v1/elections/svc/primary')).body, { name: 'svc/primary', leader: null });
  });

  it('POST /v1/cluster/transfer-leadership moves the leader (through a follower, to a chosen node and by default); held locks keep their tokens', async () => {
    const hold = await post('n1', '/v1/locks/transfer/held/acquire', {});
    assert.equal(hold.status, 200, hold.text);
    tokens.grant(hold.body.fencing_token, 'transfer/held');

    const l1 = await leader();
    const [f1, f2] = ids.filter((x) => x !== l1);
    // to a chosen node, asked through the OTHER follower
    const r = await post(f1!, '/v1/cluster/transfer-leadership', { to: f2 });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { leader_id: f2 });
    assert.equal(await h.waitForLeader(10_000), f2);

    // by default: the most up-to-date follower
    const r2 = await post(f2!, '/v1/cluster/transfer-leadership', {});
    assert.equal(r2.status, 200, r2.text);
    assert.notEqual(r2.body.leader_id, f2);
    const l3 = await h.waitForLeader(10_000);
    assert.equal(l3, r2.body.leader_id);

    // an unknown target is the caller's mistake
    assertError(await post(l3, '/v1/cluster/transfer-leadership', { to: 'nope' }), 400, 'invalid_request');

    for (const id of ids) {
      const g = await get(id, '/v1/locks/transfer/held');
      assert.equal(g.body.holder.fencing_token, hold.body.fencing_token, `after transfers, via ${id}`);
    }
    // a new grant gets a greater token under the new leader
    const next = await post(l3, '/v1/locks/transfer/next/acquire', {});
    assert.equal(next.status, 200, next.text);
    tokens.grant(next.body.fencing_token, 'transfer/next');
  });
});
