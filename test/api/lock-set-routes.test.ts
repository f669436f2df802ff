// POST /v1/locks/acquire-all and /v1/locks/release-all (docs/contract.md §5 "Lock sets"):
// validation (1–64 distinct valid names, the acquire fields), the auth hook asked for every
// name, Idempotency-Key passed on, a follower relaying to the leader, the `blocked` and
// `cycle` error bodies, and that a lock NAMED "acquire-all" stays reachable.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/api/errors.js';
import { deadlockError, setHeldError } from '../../src/api/result-errors.js';
import { FakeService } from './fake-service.js';
import { assertError, json, makeApp } from './helpers.js';

const post = (url: string, payload: unknown, headers: Record<string, string> = {}) => ({ method: 'POST' as const, url, payload: payload as Record<string, unknown>, headers });

describe('lock set routes', () => {
  it('acquire-all grants in the request order; release-all answers what it released; GET of a lock named acquire-all still works', async () => {
    const { app, service } = makeApp();
    try {
      const r = await app.inject(post('/v1/locks/acquire-all', { names: ['accounts/2', 'accounts/1'], ttl_ms: 5000, wait_ms: 1000, owner: 'w', mode: 'exclusive', max_hold_ms: 60000 }, { 'idempotency-key': 'k-1' }));
      assert.equal(r.statusCode, 200, r.body);
      const g = json(r) as { session_id: string; ttl_ms: number; grants: { name: string; fencing_token: number }[] };
      assert.deepEqual(g.grants.map((x) => x.name), ['accounts/2', 'accounts/1']);
      assert.equal(g.ttl_ms, 5000);
      const call = service.last('acquireAll');
      assert.deepEqual(call?.args, [['accounts/2', 'accounts/1'], { sessionId: undefined, ttlMs: 5000, waitMs: 1000, owner: 'w', mode: 'exclusive', maxHoldMs: 60000 }]);
      assert.equal(call?.ctx?.idempotencyKey, 'k-1');
      const rel = await app.inject(post('/v1/locks/release-all', { names: ['accounts/1', 'x'], session_id: g.session_id }));
      assert.deepEqual(json(rel), { released: ['accounts/1'] });
      // a lock whose name is "acquire-all" is still a lock (any method but POST, or encoded)
      const get = await app.inject({ method: 'GET', url: '/v1/locks/acquire-all' });
      assert.equal(get.statusCode, 200, get.body);
      assert.equal(json(get)['name'], 'acquire-all');
    } finally {
      await app.close();
    }
  });

  it('refuses bad bodies with 400 naming the field: no names, 65 names, a repeat, a bad name, unknown fields, no session on release-all', async () => {
    const { app, service } = makeApp();
    try {
      const cases: [string, unknown, string][] = [
        ['/v1/locks/acquire-all', {}, 'body.names'],
        ['/v1/locks/acquire-all', { names: [] }, 'body.names'],
        ['/v1/locks/acquire-all', { names: Array.from({ length: 65 }, (_, i) => `n${i}`) }, 'at most 64'],
        ['/v1/locks/acquire-all', { names: ['a', 'b', 'a'] }, 'body.names[2]'],
        ['/v1/locks/acquire-all', { names: ['a', 'bad name'] }, 'body.names[1]'],
        ['/v1/locks/acquire-all', { names: ['a', 'x/../y'] }, '".." path segments'],
        ['/v1/locks/acquire-all', { names: 'a' }, 'body.names'],
        ['/v1/locks/acquire-all', { names: ['a'], wait_ms: 300_001 }, 'body.wait_ms'],
        ['/v1/locks/acquire-all', { names: ['a'], mode: 'read' }, 'body.mode'],
        ['/v1/locks/acquire-all', { names: ['a'], extra: 1 }, 'extra'],
        ['/v1/locks/release-all', { names: ['a'] }, 'body.session_id'],
        ['/v1/locks/release-all', { names: ['a', 'a'], session_id: 's1' }, 'body.names[1]'],
      ];
      for (const [url, body, field] of cases) assertError(await app.inject(post(url, body)), 400, 'invalid_request', field);
      assert.equal(service.calls.filter((c) => c.method === 'acquireAll' || c.method === 'releaseAll').length, 0, 'nothing reached the service');
      // 64 names is fine
      const ok = await app.inject(post('/v1/locks/acquire-all', { names: Array.from({ length: 64 }, (_, i) => `n${i}`) }));
      assert.equal(ok.statusCode, 200, ok.body);
    } finally {
      await app.close();
    }
  });

  it('the auth hook is asked for the lock right on every name', async () => {
    const asked: { right: string; name?: string }[] = [];
    const { app } = makeApp({
      authorize: (a) => {
        asked.push({ right: a.right, ...(a.name !== undefined ? { name: a.name } : {}) });
        if (a.name?.startsWith('payroll/')) throw new ApiError('permission_denied', `no right on ${a.name}`);
        return 'billing';
      },
    });
    try {
      const r = await app.inject(post('/v1/locks/acquire-all', { names: ['billing/a', 'billing/b'] }, { authorization: 'Bearer t' }));
      assert.equal(r.statusCode, 200, r.body);
      assert.deepEqual(asked, [{ right: 'lock', name: 'billing/a' }, { right: 'lock', name: 'billing/b' }]);
      assertError(await app.inject(post('/v1/locks/acquire-all', { names: ['billing/a', 'payroll/x'] }, { authorization: 'Bearer t' })), 403, 'permission_denied', 'payroll/x');
      assertError(await app.inject(post('/v1/locks/release-all', { names: ['payroll/x'], session_id: 's1' }, { authorization: 'Bearer t' })), 403, 'permission_denied');
    } finally {
      await app.close();
    }
  });

  it('renders 409 lock_held with blocked and 409 deadlock with cycle', async () => {
    const service = new FakeService();
    const { app } = makeApp({ service });
    try {
      service.failWith = setHeldError([{ name: 'accounts/2', holder: { sessionId: 's9', owner: 'w9', fencingToken: 77 } }, { name: 'accounts/3' }]);
      const held = assertError(await app.inject(post('/v1/locks/acquire-all', { names: ['accounts/1', 'accounts/2', 'accounts/3'] })), 409, 'lock_held', 'accounts/2');
      assert.deepEqual(held['blocked'], [{ name: 'accounts/2', holder: { session_id: 's9', owner: 'w9', fencing_token: 77 } }, { name: 'accounts/3' }]);
      service.failWith = deadlockError([{ sessionId: 's2', name: 'accounts/1' }, { sessionId: 's1', name: 'accounts/2' }, { sessionId: 's3', name: 'pool', kind: 'semaphore' }]);
      const dl = assertError(await app.inject(post('/v1/locks/acquire-all', { names: ['accounts/1'] })), 409, 'deadlock', 's2 waits on accounts/1 for s1');
      assert.deepEqual(dl['cycle'], [{ session_id: 's2', name: 'accounts/1' }, { session_id: 's1', name: 'accounts/2' }, { session_id: 's3', name: 'pool', kind: 'semaphore' }]);
    } finally {
      await app.close();
    }
  });

  it('a follower relays acquire-all and release-all to the leader, Idempotency-Key and all', async () => {
    const leader = makeApp({ nodeId: 'n1' });
    const url = await leader.app.listen({ host: '127.0.0.1', port: 0 });
    const fs = new FakeService();
    fs.routingView = { isLeader: false, leaderApi: url };
    const f = makeApp({ service: fs, nodeId: 'n2' });
    try {
      const r = await f.app.inject(post('/v1/locks/acquire-all', { names: ['a', 'b'], wait_ms: 10 }, { 'idempotency-key': 'relay-1' }));
      assert.equal(r.statusCode, 200, r.body);
      assert.equal(r.headers['x-raftlock-forwarded'], 'n2');
      assert.equal(leader.service.last('acquireAll')?.ctx?.idempotencyKey, 'relay-1');
      assert.equal(fs.calls.length, 0, 'the follower served nothing itself');
      const sid = (json(r) as { session_id: string }).session_id;
      const rel = await f.app.inject(post('/v1/locks/release-all', { names: ['a', 'b'], session_id: sid }));
      assert.deepEqual(json(rel), { released: ['a', 'b'] });
    } finally {
      await f.app.close();
      await leader.app.close();
    }
  });
});
