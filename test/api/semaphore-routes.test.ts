// GET /v1/semaphores and the withdrawal of a queued semaphore wait by a release, through
// the REST layer on a real service (the lock FSM on a stand-in driver, as in
// test/server/services/service-fixture.ts): the list's shape, order, prefix, limit and consistency
// as GET /v1/locks (docs/contract.md §4 "Semaphores"), its answers against the OpenAPI
// document's SemaphoreList, and docs/api.md "Release" for semaphores.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { FastifyInstance } from 'fastify';
import { setup } from '../server/services/service-fixture.js';
import { assertError, json, makeApp } from './helpers.js';

type Json = Record<string, unknown>;

async function post(app: FastifyInstance, url: string, body: Json) {
  return app.inject({ method: 'POST', url, payload: body });
}

async function session(app: FastifyInstance): Promise<string> {
  const r = await post(app, '/v1/sessions', { ttl_ms: 60_000 });
  assert.equal(r.statusCode, 201, r.body);
  return json(r)['session_id'] as string;
}

/** polls until `cond` holds (a waiting request reaches the FSM a few turns after inject) */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function listValidator(app: FastifyInstance): Promise<(v: unknown) => string | null> {
  const doc = JSON.parse((await app.inject({ method: 'GET', url: '/openapi.json' })).body) as Json;
  const ajv = new Ajv2020({ strict: false });
  ajv.addSchema({ $id: 'doc', components: doc['components'] });
  const v = ajv.getSchema('doc#/components/schemas/SemaphoreList');
  assert.ok(v, 'the document has SemaphoreList');
  return (x) => (v(x) ? null : ajv.errorsText(v.errors));
}

test('GET /v1/semaphores: semaphores with holders or waiters, sorted by name, by prefix and limit, stale or linearizable; bad queries are 400', async () => {
  const f = setup();
  const { app } = makeApp({ service: f.svc as never });
  const check = await listValidator(app);
  try {
    assert.deepEqual(json(await app.inject({ method: 'GET', url: '/v1/semaphores' })), { semaphores: [] });
    const a = await session(app);
    const b = await session(app);
    assert.equal((await post(app, '/v1/semaphores/pool/b/acquire', { session_id: a, limit: 1, owner: 'wa' })).statusCode, 200);
    assert.equal((await post(app, '/v1/semaphores/pool/a/acquire', { session_id: a, limit: 3, permits: 2 })).statusCode, 200);
    assert.equal((await post(app, '/v1/semaphores/other/acquire', { session_id: b, limit: 1 })).statusCode, 200);
    const waiting = post(app, '/v1/semaphores/pool/b/acquire', { session_id: b, limit: 1, wait_ms: 30_000, owner: 'wb' });
    await until(() => f.app.fsm.semWaitOf('pool/b', b) !== undefined, 'b to queue');

    const all = json(await app.inject({ method: 'GET', url: '/v1/semaphores' }));
    assert.equal(check(all), null, JSON.stringify(all));
    const sems = all['semaphores'] as { name: string; limit: number; in_use: number; holders: Json[]; waiters: Json[] }[];
    assert.deepEqual(sems.map((s) => s.name), ['other', 'pool/a', 'pool/b']);
    const pb = sems[2]!;
    assert.deepEqual([pb.limit, pb.in_use, pb.holders.length], [1, 1, 1]);
    assert.deepEqual(pb.holders[0], { session_id: a, owner: 'wa', permits: 1, fencing_token: (pb.holders[0] as Json)['fencing_token'] });
    assert.deepEqual(pb.waiters, [{ session_id: b, owner: 'wb', permits: 1, position: 1 }]);
    assert.deepEqual(sems[1]!.in_use, 2);
    // each entry is what GET /v1/semaphores/{name} answers
    assert.deepEqual(json(await app.inject({ method: 'GET', url: '/v1/semaphores/pool/b' })), pb);

    const some = json(await app.inject({ method: 'GET', url: '/v1/semaphores?prefix=pool/&limit=1' }));
    assert.deepEqual((some['semaphores'] as Json[]).map((s) => s['name']), ['pool/a']);
    const stale = json(await app.inject({ method: 'GET', url: '/v1/semaphores?prefix=pool/&consistency=stale' }));
    assert.deepEqual((stale['semaphores'] as Json[]).map((s) => s['name']), ['pool/a', 'pool/b']);
    assert.deepEqual(json(await app.inject({ method: 'GET', url: '/v1/semaphores?prefix=zzz' })), { semaphores: [] });

    assertError(await app.inject({ method: 'GET', url: '/v1/semaphores?limit=0' }), 400, 'invalid_request', 'query.limit');
    assertError(await app.inject({ method: 'GET', url: '/v1/semaphores?limit=10001' }), 400, 'invalid_request', 'query.limit');
    assertError(await app.inject({ method: 'GET', url: '/v1/semaphores?prefix=a%20b' }), 400, 'invalid_request', 'query.prefix');
    assertError(await app.inject({ method: 'GET', url: '/v1/semaphores?extra=1' }), 400, 'invalid_request', 'query.extra');
    assertError(await app.inject({ method: 'POST', url: '/v1/semaphores', payload: {} }), 404, 'not_found');

    f.svc.shutdown();
    await waiting;
  } finally {
    await app.close();
  }
});

test('POST /v1/semaphores/{name}/release by a session that waits: 409 not_holder, the wait is withdrawn, the waiting request answers 409 semaphore_full', async () => {
  const f = setup();
  const { app } = makeApp({ service: f.svc as never });
  try {
    const a = await session(app);
    const b = await session(app);
    assert.equal((await post(app, '/v1/semaphores/S/acquire', { session_id: a, limit: 1 })).statusCode, 200);
    const waiting = post(app, '/v1/semaphores/S/acquire', { session_id: b, limit: 1, wait_ms: 30_000 });
    await until(() => f.app.fsm.semWaitOf('S', b) !== undefined, 'b to queue');
    assert.equal((json(await app.inject({ method: 'GET', url: '/v1/semaphores/S' }))['waiters'] as Json[]).length, 1);
    assertError(await post(app, '/v1/semaphores/S/release', { session_id: b }), 409, 'not_holder');
    const w = await waiting;
    assertError(w, 409, 'semaphore_full');
    assert.deepEqual(json(w)['error'] && [(json(w)['error'] as Json)['in_use'], (json(w)['error'] as Json)['limit']], [1, 1]);
    assert.deepEqual(json(await app.inject({ method: 'GET', url: '/v1/semaphores/S' }))['waiters'], []);
    assert.equal((await post(app, '/v1/semaphores/S/release', { session_id: a })).statusCode, 200);
    assert.deepEqual(json(await app.inject({ method: 'GET', url: '/v1/semaphores' })), { semaphores: [] }, 'nobody was granted the permit b gave up');
  } finally {
    await app.close();
  }
});
