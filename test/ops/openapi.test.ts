// The OpenAPI document (docs/operations.md "API description: OpenAPI and /docs"): served at
// /openapi.json and rendered at /docs, built from the routes' own zod schemas. Checked with
// an independent validator (ajv, JSON Schema 2020-12): the contract's examples
// (docs/contract.md §3 "REST API") validate, bad requests do not, real answers of the
// server validate against the answer schemas, and for random acquire bodies the document
// and the server agree on what is a 400.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import type { OpsService } from '../../src/api/ops-service.js';
import { ok } from '../../src/api/service-result.js';
import { makeApp } from '../api/helpers.js';
import { testSeed } from '../support/seed.js';

type Json = Record<string, unknown>;

async function documentOf(app: FastifyInstance): Promise<Json> {
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return JSON.parse(res.body) as Json;
}

function validatorFor(doc: Json): (schema: string, value: unknown) => string | null {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  ajv.addSchema({ $id: 'doc', components: doc['components'] });
  return (schema, value) => {
    const v = ajv.getSchema(`doc#/components/schemas/${schema}`);
    assert.ok(v, `schema ${schema} exists`);
    return v(value) ? null : ajv.errorsText(v.errors);
  };
}

const fakeOps: OpsService = {
  observations: () => ({ node_id: 'n1', node_started_at_ms: 1, leader_changes: [{ at_ms: 2, leader_id: 'n1', term: 3 }], sessions: 1, locks_held: 1, waiters: 0, locks_in_delay: 0, last_token: 1 }),
  heldSince: () => ({ since_ms: 5, exact: true }),
  backup: async () => ok({ file: Buffer.from('raftlock-backup v1\n'), index: 1, term: 1 }),
};

describe('OpenAPI document', () => {
  it('covers every route of the contract, with operation ids and error answers', async () => {
    const { app } = makeApp({ ops: fakeOps });
    const doc = await documentOf(app);
    assert.equal(doc['openapi'], '3.1.0');
    const paths = doc['paths'] as Record<string, Record<string, Json>>;
    const want: [string, string][] = [
      ['post', '/v1/sessions'], ['post', '/v1/sessions/{id}/keepalive'], ['get', '/v1/sessions/{id}'], ['delete', '/v1/sessions/{id}'],
      ['post', '/v1/locks/{name}/acquire'], ['post', '/v1/locks/{name}/renew'], ['post', '/v1/locks/{name}/release'], ['get', '/v1/locks/{name}'],
      ['get', '/v1/locks'], ['get', '/v1/locks/{name}/check'], ['get', '/healthz'], ['get', '/readyz'], ['get', '/metrics'], ['get', '/v1/cluster'],
      ['post', '/v1/cluster/members'], ['delete', '/v1/cluster/members/{id}'], ['post', '/v1/cluster/transfer-leadership'], ['get', '/v1/status'], ['get', '/v1/snapshot'],
      ['get', '/v1/semaphores'], ['get', '/v1/semaphores/{name}'], ['post', '/v1/semaphores/{name}/acquire'], ['put', '/v1/semaphores/{name}/limit'], ['post', '/v1/semaphores/{name}/release'],
      ['get', '/v1/watch'], ['post', '/v1/locks/acquire-all'], ['post', '/v1/locks/release-all'],
    ];
    const ids = new Set<string>();
    for (const [method, path] of want) {
      const op = paths[path]?.[method];
      assert.ok(op, `${method.toUpperCase()} ${path} is documented`);
      assert.equal(typeof op['operationId'], 'string');
      assert.ok(!ids.has(op['operationId'] as string), 'operation ids are unique');
      ids.add(op['operationId'] as string);
    }
    const acquire = paths['/v1/locks/{name}/acquire']!['post']!['responses'] as Json;
    for (const status of ['200', '400', '401', '404', '409', '503', '504']) assert.ok(acquire[status], `acquire documents ${status}`);
    // the same document, rendered: every operation on the /docs page, no outside resource
    const html = await app.inject({ method: 'GET', url: '/docs' });
    assert.equal(html.statusCode, 200);
    assert.match(String(html.headers['content-type']), /^text\/html/);
    for (const id of ids) assert.ok(html.body.includes(`id="op-${id}"`), `/docs shows ${id}`);
    assert.doesNotMatch(html.body, /<script|<link|<img|<iframe|\ssrc=|@import|url\(/i, '/docs loads nothing');
    await app.close();
  });

  it("the contract's examples validate; requests the server refuses do not", async () => {
    const { app } = makeApp();
    const check = validatorFor(await documentOf(app));
    const ok: [string, unknown][] = [
      ['OpenSessionRequest', {}], ['OpenSessionRequest', { ttl_ms: 10000, owner: 'worker-7', lock_delay_ms: 0 }],
      ['AcquireRequest', {}], ['AcquireRequest', { session_id: 's-1', ttl_ms: 10000, wait_ms: 30000, owner: 'worker-7' }],
      ['RenewRequest', { session_id: 's-1' }], ['ReleaseRequest', { session_id: 's-1', fencing_token: 42 }],
      ['AddMemberRequest', { id: 'n4', api: 'http://127.0.0.1:7004', peer: 'http://127.0.0.1:7104' }], ['TransferRequest', {}], ['TransferRequest', { to: 'n2' }],
      ['SessionGrant', { session_id: 's-1', ttl_ms: 10000 }],
      ['Keepalive', { session_id: 's-1', ttl_ms: 10000 }],
      ['Keepalive', { session_id: 's-1', ttl_ms: 10000, grants: [{ kind: 'lock', name: 'a', fencing_token: 7 }, { kind: 'lock', name: 'r', fencing_token: 8, mode: 'shared' }, { kind: 'election', name: 'e', fencing_token: 9 }, { kind: 'semaphore', name: 'p', fencing_token: 10 }] }],
      ['Session', { session_id: 's-1', owner: 'worker-7', ttl_ms: 10000, locks: ['billing/invoice-42'] }],
      ['SessionClosed', { released: ['a', 'b'] }],
      ['Grant', { name: 'billing/invoice-42', session_id: 's-1', fencing_token: 1042, ttl_ms: 10000 }],
      ['Released', { name: 'billing/invoice-42', released: true }],
      ['Lock', { name: 'a', held: true, holder: { session_id: 's-1', owner: 'w', fencing_token: 7 }, waiters: 2 }], ['Lock', { name: 'a', held: false, waiters: 0 }],
      ['LockList', { locks: [{ name: 'a', held: true, holder: { session_id: 's-1', owner: '', fencing_token: 7 }, waiters: 0 }] }],
      ['Check', { name: 'a', current: false }],
      ['SemaphoreList', { semaphores: [] }],
      ['SemaphoreList', { semaphores: [{ name: 'db/pool', limit: 4, in_use: 1, holders: [{ session_id: 's-1', owner: 'w', permits: 1, fencing_token: 9 }], waiters: [{ session_id: 's-2', owner: '', permits: 3, position: 1 }] }] }],
      ['ClusterView', { node_id: 'n1', role: 'leader', term: 3, leader_id: 'n1', commit_index: 10, applied_index: 10, members: [{ id: 'n1', api: 'http://127.0.0.1:7001', peer: 'http://127.0.0.1:7101', role: 'leader', match_index: 10 }] }],
      ['ClusterView', { node_id: 'n2', role: 'follower', term: 3, leader_id: null, commit_index: 0, applied_index: 0, members: [] }],
      ['Error', { error: { code: 'lock_held', message: 'the lock is held by another session', holder: { session_id: 's-1', owner: 'w', fencing_token: 7 } } }],
      ['Error', { error: { code: 'invalid_request', message: 'body.ttl_ms: must be >= 1000, got 5' } }],
      ['TransferResult', { leader_id: 'n2' }],
      // docs/contract.md §5
      ['AcquireAllRequest', { names: ['accounts/1', 'accounts/2'], session_id: 's-1', ttl_ms: 10000, wait_ms: 30000, mode: 'shared', owner: 'w', max_hold_ms: 60000 }],
      ['ReleaseAllRequest', { names: ['accounts/1'], session_id: 's-1' }],
      ['LockSetGrant', { session_id: 's-1', ttl_ms: 10000, grants: [{ name: 'accounts/1', fencing_token: 7 }, { name: 'accounts/2', fencing_token: 8 }] }],
      ['ReleasedAll', { released: [] }],
      ['Keepalive', { session_id: 's-1', ttl_ms: 10000, grants: [{ kind: 'lock', name: 'a', fencing_token: 7, waiters: 3 }] }],
      ['Error', { error: { code: 'lock_held', message: 'm', blocked: [{ name: 'accounts/2', holder: { session_id: 's-2', owner: '', fencing_token: 9 } }, { name: 'accounts/3' }] } }],
      ['Error', { error: { code: 'deadlock', message: 'm', cycle: [{ session_id: 's-2', name: 'accounts/1' }, { session_id: 's-1', name: 'accounts/2' }] } }],
    ];
    for (const [schema, value] of ok) assert.equal(check(schema, value), null, `${schema} ${JSON.stringify(value)}`);
    const bad: [string, unknown][] = [
      ['AcquireRequest', { wait_ms: 300_001 }], ['AcquireRequest', { ttl_ms: 5 }], ['AcquireRequest', { extra: 1 }], ['AcquireRequest', { wait_ms: 1.5 }],
      ['RenewRequest', {}], ['ReleaseRequest', { session_id: 's-1', fencing_token: 0 }], ['OpenSessionRequest', { lock_delay_ms: -1 }],
      ['AcquireAllRequest', {}], ['AcquireAllRequest', { names: [] }], ['AcquireAllRequest', { names: Array.from({ length: 65 }, (_, i) => `n${i}`) }], ['ReleaseAllRequest', { names: ['a'] }],
      ['AddMemberRequest', { id: '-bad', api: 'http://x:1', peer: 'http://x:2' }], ['Grant', { name: 'a' }], ['SemaphoreList', { semaphores: [{ name: 'p', limit: 0, in_use: 0, holders: [], waiters: [] }] }], ['Error', { error: { code: 'Bad Code', message: 'x' } }],
    ];
    for (const [schema, value] of bad) assert.notEqual(check(schema, value), null, `${schema} ${JSON.stringify(value)} must not validate`);
    await app.close();
  });

  it("the server's real answers validate against the answer schemas", async () => {
    const { app } = makeApp({ ops: fakeOps });
    const check = validatorFor(await documentOf(app));
    const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, schema: string, body?: unknown): Promise<Json> => {
      const res = await app.inject({ method, url, ...(body !== undefined ? { payload: body as Json } : {}) });
      const v = JSON.parse(res.body) as Json;
      assert.equal(check(schema, v), null, `${method} ${url} → ${res.statusCode} ${res.body}`);
      return v;
    };
    const s = await call('POST', '/v1/sessions', 'SessionGrant', { ttl_ms: 5000 });
    const g = await call('POST', '/v1/locks/a/b/acquire', 'Grant', { session_id: s['session_id'] });
    await call('GET', '/v1/locks/a/b', 'Lock');
    await call('GET', '/v1/locks', 'LockList');
    await call('GET', `/v1/locks/a/b/check?fencing_token=${String(g['fencing_token'])}`, 'Check');
    await call('GET', `/v1/sessions/${String(s['session_id'])}`, 'Session');
    await call('POST', `/v1/sessions/${String(s['session_id'])}/keepalive`, 'Keepalive');
    await call('POST', '/v1/locks/a/b/acquire', 'Error', {});
    await call('POST', '/v1/locks/a/b/acquire', 'Error', { wait_ms: -1 });
    await call('GET', '/v1/cluster', 'ClusterView');
    await call('GET', '/v1/status', 'Status');
    await call('POST', '/v1/locks/a/b/release', 'Released', { session_id: s['session_id'] });
    await call('POST', '/v1/locks/acquire-all', 'LockSetGrant', { names: ['x', 'y'], session_id: s['session_id'] });
    await call('POST', '/v1/locks/release-all', 'ReleasedAll', { names: ['x', 'y'], session_id: s['session_id'] });
    await call('POST', '/v1/locks/acquire-all', 'Error', { names: ['x', 'x'] });
    await call('DELETE', `/v1/sessions/${String(s['session_id'])}`, 'SessionClosed');
    await call('GET', '/healthz', 'Health');
    await app.close();
  });

  it('the document and the server agree on which acquire bodies are invalid (property)', async () => {
    const { app } = makeApp();
    const check = validatorFor(await documentOf(app));
    const value = fc.oneof(fc.integer({ min: -10, max: 400_000 }), fc.constantFrom(0, 1000, 3_600_000, 3_600_001, 300_000, 300_001, 1.5), fc.string({ maxLength: 8 }), fc.boolean(), fc.constant(null));
    const body = fc.dictionary(fc.constantFrom('session_id', 'ttl_ms', 'wait_ms', 'owner', 'extra'), value, { maxKeys: 4 });
    const seed = testSeed('FC_SEED', { what: 'openapi property', replay: 'node --test dist/test/ops/openapi.test.js' });
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await app.inject({ method: 'POST', url: '/v1/locks/p/acquire', payload: b });
        const docSaysOk = check('AcquireRequest', b) === null;
        // the server may still refuse a valid body for other reasons (unknown session: 404)
        assert.equal(res.statusCode === 400, !docSaysOk, `body ${JSON.stringify(b)}: server ${res.statusCode} ${res.body}, document ${docSaysOk ? 'valid' : 'invalid'}`);
      }),
      { numRuns: 300, seed },
    );
    await app.close();
  });
});
