// Every route of docs/contract.md §3 "REST API" answers with the contract's success shape,
// and every error code of the catalog renders with its status, shape and headers.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ApiError, ERROR_CATALOG, type ErrorCode } from '../../src/api/errors.js';
import { assertError, json, makeApp } from './helpers.js';

describe('routes: success shapes', () => {
  const { app, service } = makeApp();
  after(() => app.close());

  it('sessions: open, keepalive, get, delete', async () => {
    let r = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { ttl_ms: 5000, owner: 'worker-1', lock_delay_ms: 100 } });
    assert.equal(r.statusCode, 201);
    const { session_id } = json(r) as { session_id: string };
    assert.deepEqual(json(r), { session_id, ttl_ms: 5000 });
    assert.deepEqual(service.last()?.args, [{ ttlMs: 5000, owner: 'worker-1', lockDelayMs: 100 }]);

    r = await app.inject({ method: 'POST', url: `/v1/sessions/${session_id}/keepalive` });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(json(r), { session_id, ttl_ms: 5000 });

    r = await app.inject({ method: 'POST', url: `/v1/locks/jobs/a/acquire`, payload: { session_id } });
    assert.equal(r.statusCode, 200);

    r = await app.inject({ method: 'GET', url: `/v1/sessions/${session_id}` });
    assert.deepEqual(json(r), { session_id, owner: 'worker-1', ttl_ms: 5000, locks: ['jobs/a'] });

    r = await app.inject({ method: 'DELETE', url: `/v1/sessions/${session_id}` });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(json(r), { released: ['jobs/a'] });
    assertError(await app.inject({ method: 'GET', url: `/v1/sessions/${session_id}` }), 404, 'session_not_found');
  });

  it('a POST with an optional body accepts no body, and an empty application/json body', async () => {
    const r1 = await app.inject({ method: 'POST', url: '/v1/sessions' });
    assert.equal(r1.statusCode, 201);
    const r2 = await app.inject({ method: 'POST', url: '/v1/sessions', headers: { 'content-type': 'application/json' }, payload: '' });
    assert.equal(r2.statusCode, 201);
    const r3 = await app.inject({ method: 'POST', url: '/v1/sessions', headers: { 'content-type': 'application/json; charset=utf-8' }, payload: '{}' });
    assert.equal(r3.statusCode, 201);
  });

  it('locks: acquire (new session), re-acquire same token, renew, get, check, list, release', async () => {
    let r = await app.inject({ method: 'POST', url: '/v1/locks/db%2Fprimary/acquire', payload: { ttl_ms: 2000, owner: 'me' } });
    assert.equal(r.statusCode, 200);
    const g = json(r) as { name: string; session_id: string; fencing_token: number; ttl_ms: number };
    assert.equal(g.name, 'db/primary');
    assert.equal(g.ttl_ms, 2000);
    assert.ok(Number.isSafeInteger(g.fencing_token) && g.fencing_token > 0);
    assert.deepEqual(Object.keys(g).sort(), ['fencing_token', 'name', 'session_id', 'ttl_ms']);
    assert.equal((service.last('acquire')?.args[1] as { waitMs: number }).waitMs, 0, 'wait_ms defaults to 0');

    r = await app.inject({ method: 'POST', url: '/v1/locks/db/primary/acquire', payload: { session_id: g.session_id, wait_ms: 1000 } });
    assert.equal(json(r).fencing_token, g.fencing_token, 'raw "/" and %2F name the same lock');

    r = await app.inject({ method: 'POST', url: '/v1/locks/db/primary/renew', payload: { session_id: g.session_id } });
    assert.deepEqual(json(r), { name: 'db/primary', session_id: g.session_id, fencing_token: g.fencing_token, ttl_ms: 2000 });

    r = await app.inject({ method: 'GET', url: '/v1/locks/db/primary' });
    assert.deepEqual(json(r), { name: 'db/primary', held: true, holder: { session_id: g.session_id, owner: 'me', fencing_token: g.fencing_token }, waiters: 0 });
    assert.deepEqual(service.last()?.args, ['db/primary', 'linearizable']);

    r = await app.inject({ method: 'GET', url: '/v1/locks/db/primary?consistency=stale' });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(service.last()?.args, ['db/primary', 'stale']);

    r = await app.inject({ method: 'GET', url: `/v1/locks/db/primary/check?fencing_token=${g.fencing_token}` });
    assert.deepEqual(json(r), { name: 'db/primary', current: true });
    r = await app.inject({ method: 'GET', url: `/v1/locks/db/primary/check?fencing_token=${g.fencing_token + 1}` });
    assert.deepEqual(json(r), { name: 'db/primary', current: false });

    r = await app.inject({ method: 'GET', url: '/v1/locks?prefix=db/&limit=5' });
    assert.equal(r.statusCode, 200);
    assert.deepEqual((json(r).locks as { name: string }[]).map((l) => l.name), ['db/primary']);
    assert.deepEqual(service.last()?.args, ['db/', 5, 'linearizable']);
    r = await app.inject({ method: 'GET', url: '/v1/locks' });
    assert.deepEqual(service.last()?.args, ['', 1000, 'linearizable']);

    r = await app.inject({ method: 'POST', url: '/v1/locks/db/primary/release', payload: { session_id: g.session_id, fencing_token: g.fencing_token } });
    assert.deepEqual(json(r), { name: 'db/primary', released: true });
    r = await app.inject({ method: 'GET', url: '/v1/locks/db/primary' });
    assert.deepEqual(json(r), { name: 'db/primary', held: false, waiters: 0 });
  });

  it('a name ending in an action word is reachable with an encoded slash', async () => {
    const r = await app.inject({ method: 'GET', url: '/v1/locks/jobs%2Fcheck' });
    assert.equal(r.statusCode, 200);
    assert.equal(json(r).name, 'jobs/check');
  });

  it('Idempotency-Key reaches the service', async () => {
    await app.inject({ method: 'POST', url: '/v1/locks/k/acquire', headers: { 'idempotency-key': 'abc-123' } });
    assert.equal(service.last('acquire')?.ctx?.idempotencyKey, 'abc-123');
    assert.ok(service.last('acquire')?.ctx?.signal instanceof AbortSignal);
  });

  it('cluster: view, add member, remove member, transfer', async () => {
    let r = await app.inject({ method: 'GET', url: '/v1/cluster' });
    const c = json(r);
    for (const k of ['node_id', 'role', 'term', 'leader_id', 'commit_index', 'applied_index', 'members']) assert.ok(k in c, k);
    r = await app.inject({ method: 'POST', url: '/v1/cluster/members', payload: { id: 'n4', api: 'http://10.0.0.4:7001', peer: 'http://10.0.0.4:7101/' } });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(service.last('addMember')?.args, [{ id: 'n4', api: 'http://10.0.0.4:7001', peer: 'http://10.0.0.4:7101' }]);
    r = await app.inject({ method: 'DELETE', url: '/v1/cluster/members/n1' });
    assert.equal(r.statusCode, 200);
    assertError(await app.inject({ method: 'DELETE', url: '/v1/cluster/members/n9' }), 404, 'not_found');
    r = await app.inject({ method: 'POST', url: '/v1/cluster/transfer-leadership', payload: { to: 'n3' } });
    assert.deepEqual(json(r), { leader_id: 'n3' });
    r = await app.inject({ method: 'POST', url: '/v1/cluster/transfer-leadership' });
    assert.deepEqual(json(r), { leader_id: 'n2' });
  });

  it('ops: healthz, readyz (200 and 503 + Retry-After), metrics', async () => {
    assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    service.isReady = false;
    const r = await app.inject({ method: 'GET', url: '/readyz' });
    assertError(r, 503, 'unavailable');
    assert.ok(Number(r.headers['retry-after']) >= 1);
    service.isReady = true;
    const m = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(m.statusCode, 200);
    assert.match(String(m.headers['content-type']), /^text\/plain/);
  });

  it('every answer names the leader it knows (x-raftlock-leader), errors too; none while no leader is known', async () => {
    const saved = service.routingView;
    try {
      service.routingView = { isLeader: true, leaderApi: 'http://10.0.0.1:7001' };
      const ok = await app.inject({ method: 'GET', url: '/v1/cluster' });
      assert.equal(ok.headers['x-raftlock-leader'], 'http://10.0.0.1:7001');
      const bad = await app.inject({ method: 'POST', url: '/v1/locks/x/acquire', payload: { wait_ms: -1 } });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.headers['x-raftlock-leader'], 'http://10.0.0.1:7001', 'an error answer names it too');
      const missing = await app.inject({ method: 'GET', url: '/v1/nope' });
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.headers['x-raftlock-leader'], 'http://10.0.0.1:7001');
      // no leader known: no header (not an empty or stale one)
      service.routingView = { isLeader: false, leaderApi: null };
      const none = await app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(none.statusCode, 200);
      assert.equal(none.headers['x-raftlock-leader'], undefined);
    } finally {
      service.routingView = saved;
    }
  });

  it('every response carries a request id; a well-formed client id is adopted', async () => {
    const r1 = await app.inject({ method: 'GET', url: '/healthz' });
    assert.match(String(r1.headers['x-request-id']), /^n1-/);
    const r2 = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-42' } });
    assert.equal(r2.headers['x-request-id'], 'trace-42');
    const r3 = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'evil\tvalue with spaces' } });
    assert.match(String(r3.headers['x-request-id']), /^n1-/);
  });
});

describe('routes: every error of the catalog renders per the contract', () => {
  const { app, service } = makeApp();
  after(() => app.close());

  for (const code of Object.keys(ERROR_CATALOG) as ErrorCode[]) {
    it(`${code} → ${ERROR_CATALOG[code].status}`, async () => {
      service.failWith = new ApiError(code, `because ${code}`, code === 'lock_held' ? { details: { holder: { session_id: 's9', owner: 'x', fencing_token: 7 } } } : {});
      try {
        const r = await app.inject({ method: 'POST', url: '/v1/locks/x/acquire' });
        const e = assertError(r, ERROR_CATALOG[code].status, code, `because ${code}`);
        if (code === 'too_many_requests' || code === 'unavailable') assert.equal(r.headers['retry-after'], '1');
        else assert.equal(r.headers['retry-after'], undefined);
        if (code === 'lock_held') assert.deepEqual(e.holder, { session_id: 's9', owner: 'x', fencing_token: 7 });
      } finally {
        service.failWith = null;
      }
    });
  }

  it('an explicit retryAfterS is rounded up and sent', async () => {
    service.failWith = new ApiError('unavailable', 'electing', { retryAfterS: 2.2 });
    try {
      const r = await app.inject({ method: 'GET', url: '/v1/locks/x' });
      assertError(r, 503, 'unavailable');
      assert.equal(r.headers['retry-after'], '3');
    } finally {
      service.failWith = null;
    }
  });

  it('a non-ApiError thrown by the service is a 500 internal, not a crash, and the server keeps serving', async () => {
    service.failWith = new TypeError('boom');
    try {
      const r = await app.inject({ method: 'POST', url: '/v1/sessions' });
      const e = assertError(r, 500, 'internal');
      assert.ok(!String(e.message).includes('boom'), 'internal details are not leaked');
    } finally {
      service.failWith = null;
    }
    assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  });

  it('real conflicts from the service: lock_held with holder, not_holder, session_not_found', async () => {
    const a = json(await app.inject({ method: 'POST', url: '/v1/locks/c/acquire' })) as { session_id: string; fencing_token: number };
    const b = json(await app.inject({ method: 'POST', url: '/v1/sessions' })) as { session_id: string };
    const held = assertError(await app.inject({ method: 'POST', url: '/v1/locks/c/acquire', payload: { session_id: b.session_id } }), 409, 'lock_held');
    assert.deepEqual(held.holder, { session_id: a.session_id, owner: '', fencing_token: a.fencing_token });
    assertError(await app.inject({ method: 'POST', url: '/v1/locks/c/renew', payload: { session_id: b.session_id } }), 409, 'not_holder');
    assertError(await app.inject({ method: 'POST', url: '/v1/locks/c/release', payload: { session_id: a.session_id, fencing_token: a.fencing_token + 1 } }), 409, 'not_holder');
    assertError(await app.inject({ method: 'POST', url: '/v1/sessions/nope/keepalive' }), 404, 'session_not_found');
  });

  it('unknown routes and wrong methods → 404 not_found in the error shape', async () => {
    assertError(await app.inject({ method: 'GET', url: '/nope' }), 404, 'not_found');
    assertError(await app.inject({ method: 'PUT', url: '/v1/sessions' }), 404, 'not_found');
    assertError(await app.inject({ method: 'DELETE', url: '/v1/locks/x' }), 404, 'not_found');
    assertError(await app.inject({ method: 'GET', url: '/v1/locks/x/acquire' }), 404, 'not_found');
    assertError(await app.inject({ method: 'POST', url: '/v1/locks/x' }), 404, 'not_found');
  });

  it('a request arriving while the server closes gets 503 unavailable; in-flight waits are aborted', async () => {
    const { app: app2, service: s2 } = makeApp();
    let seen: AbortSignal | undefined;
    s2.acquire = (_n, _p, ctx) =>
      new Promise((_res, rej) => {
        seen = ctx.signal;
        ctx.signal.addEventListener('abort', () => rej(new ApiError('unavailable', 'shutting down')));
      });
    const pending = app2.inject({ method: 'POST', url: '/v1/locks/w/acquire', payload: { wait_ms: 300000 } });
    const deadline = Date.now() + 5000;
    while (!seen && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    assert.ok(seen, 'acquire reached the service');
    await app2.close();
    assert.equal(seen.aborted, true);
    assertError(await pending, 503, 'unavailable');
  });
});

describe('routes: shutdown over a real socket', () => {
  it('a waiting acquire gets a 503 answer, not a cut connection, when the server closes', async () => {
    const { app, service } = makeApp();
    let reached = false;
    service.acquire = (_n, _p, ctx) =>
      new Promise((_res, rej) => {
        reached = true;
        ctx.signal.addEventListener('abort', () => rej(new ApiError('unavailable', 'shutting down')));
      });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const { request } = await import('undici');
    const pending = request(`${url}/v1/locks/w/acquire`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"wait_ms":300000}' });
    const deadline = Date.now() + 5000;
    while (!reached && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.ok(reached);
    const t0 = Date.now();
    await app.close();
    assert.ok(Date.now() - t0 < 5000, 'close does not wait for the 300 s wait');
    const res = await pending;
    const text = await res.body.text();
    assertError({ statusCode: res.statusCode, body: text, headers: res.headers }, 503, 'unavailable');
  });

  it('serverOptions reach the node http server (slowloris and keep-alive timeouts)', async () => {
    const { app } = makeApp();
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      assert.equal(app.server.headersTimeout, 10_000);
      assert.equal(app.server.requestTimeout, 30_000);
      assert.equal(app.server.keepAliveTimeout, 72_000);
      assert.equal(app.server.timeout, 330_000);
    } finally {
      await app.close();
    }
  });
});

describe('routes: the auth hook', () => {
  it('is asked with the right and the lock name; its ApiError renders; health probes skip it', async () => {
    const asked: { right: string; name?: string; authorization?: string }[] = [];
    const { app, service } = makeApp({
      authorize: (a) => {
        asked.push(a);
        if (!a.authorization) throw new ApiError('unauthenticated', 'missing bearer token');
        if (a.right === 'admin') throw new ApiError('permission_denied', 'token "billing" may not do cluster operations');
        return 'billing';
      },
    });
    try {
      assertError(await app.inject({ method: 'POST', url: '/v1/locks/billing/x/acquire' }), 401, 'unauthenticated');
      const ok = await app.inject({ method: 'POST', url: '/v1/locks/billing/x/acquire', headers: { authorization: 'Bearer t' } });
      assert.equal(ok.statusCode, 200);
      assert.equal(service.last('acquire')?.ctx?.principal, 'billing');
      assert.deepEqual(asked.at(-1), { authorization: 'Bearer t', right: 'lock', name: 'billing/x' });
      await app.inject({ method: 'GET', url: '/v1/locks?prefix=billing/', headers: { authorization: 'Bearer t' } });
      assert.deepEqual(asked.at(-1), { authorization: 'Bearer t', right: 'read', name: 'billing/' });
      assertError(await app.inject({ method: 'POST', url: '/v1/cluster/transfer-leadership', headers: { authorization: 'Bearer t' } }), 403, 'permission_denied');
      const n = asked.length;
      assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
      assert.equal(asked.length, n, 'healthz and readyz are not behind auth');
    } finally {
      await app.close();
    }
  });
});
