// Bad input of every kind gets a clear 4xx in the contract's shape, never a crash: the
// table below is the issue's list, then 1,000 fast-check generated garbage requests at once.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { Client } from 'undici';
import { assertError, makeApp } from './helpers.js';
import { testSeed } from '../support/seed.js';

type Case = { title: string; method: 'GET' | 'POST' | 'DELETE'; url: string; headers?: Record<string, string>; payload?: string | object; status: number; code: string; msg?: string };

const J = { 'content-type': 'application/json' };
const cases: Case[] = [
  // bodies
  { title: 'invalid JSON', method: 'POST', url: '/v1/sessions', headers: J, payload: '{"ttl_ms": ', status: 400, code: 'invalid_request', msg: 'body: invalid JSON' },
  { title: 'JSON array body', method: 'POST', url: '/v1/sessions', headers: J, payload: '[1,2]', status: 400, code: 'invalid_request', msg: 'body: expected a JSON object' },
  { title: 'JSON string body', method: 'POST', url: '/v1/sessions', headers: J, payload: '"hi"', status: 400, code: 'invalid_request', msg: 'body: expected a JSON object' },
  { title: 'JSON null body', method: 'POST', url: '/v1/sessions', headers: J, payload: 'null', status: 400, code: 'invalid_request', msg: 'body' },
  { title: 'text/plain body', method: 'POST', url: '/v1/sessions', headers: { 'content-type': 'text/plain' }, payload: '{}', status: 415, code: 'unsupported_media_type' },
  { title: 'form body', method: 'POST', url: '/v1/locks/a/acquire', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=1', status: 415, code: 'unsupported_media_type' },
  { title: 'oversized body', method: 'POST', url: '/v1/sessions', headers: J, payload: JSON.stringify({ owner: 'x'.repeat(70_000) }), status: 413, code: 'payload_too_large' },
  { title: 'unknown field', method: 'POST', url: '/v1/sessions', payload: { ttl_ms: 5000, colour: 'red' }, status: 400, code: 'invalid_request', msg: 'body.colour: unknown field' },
  { title: '__proto__ key', method: 'POST', url: '/v1/sessions', headers: J, payload: '{"__proto__": {"admin": true}}', status: 400, code: 'invalid_request', msg: '__proto__' },
  { title: 'nested constructor.prototype', method: 'POST', url: '/v1/sessions', headers: J, payload: '{"owner": "x", "constructor": {"prototype": {"a": 1}}}', status: 400, code: 'invalid_request', msg: 'constructor' },
  { title: 'ttl_ms wrong type', method: 'POST', url: '/v1/sessions', payload: { ttl_ms: '10s' }, status: 400, code: 'invalid_request', msg: 'body.ttl_ms: expected number' },
  { title: 'ttl_ms below min', method: 'POST', url: '/v1/sessions', payload: { ttl_ms: 999 }, status: 400, code: 'invalid_request', msg: 'body.ttl_ms: must be >= 1000' },
  { title: 'ttl_ms above max', method: 'POST', url: '/v1/locks/a/acquire', payload: { ttl_ms: 3_600_001 }, status: 400, code: 'invalid_request', msg: 'body.ttl_ms: must be <= 3600000' },
  { title: 'ttl_ms fractional', method: 'POST', url: '/v1/sessions', payload: { ttl_ms: 1500.5 }, status: 400, code: 'invalid_request', msg: 'body.ttl_ms: expected an integer' },
  { title: 'ttl_ms 1e400 (Infinity)', method: 'POST', url: '/v1/sessions', headers: J, payload: '{"ttl_ms": 1e400}', status: 400, code: 'invalid_request', msg: 'body.ttl_ms' },
  { title: 'wait_ms huge', method: 'POST', url: '/v1/locks/a/acquire', payload: { wait_ms: 300_001 }, status: 400, code: 'invalid_request', msg: 'body.wait_ms: must be <= 300000' },
  { title: 'wait_ms negative', method: 'POST', url: '/v1/locks/a/acquire', payload: { wait_ms: -1 }, status: 400, code: 'invalid_request', msg: 'body.wait_ms: must be >= 0' },
  { title: 'max_hold_ms below 100', method: 'POST', url: '/v1/locks/a/acquire', payload: { max_hold_ms: 99 }, status: 400, code: 'invalid_request', msg: 'body.max_hold_ms: must be >= 100' },
  { title: 'max_hold_ms above 2^31-1', method: 'POST', url: '/v1/locks/a/acquire', payload: { max_hold_ms: 2 ** 31 }, status: 400, code: 'invalid_request', msg: 'body.max_hold_ms: must be <= 2147483647' },
  { title: 'max_hold_ms fractional', method: 'POST', url: '/v1/locks/a/acquire', payload: { max_hold_ms: 1000.5 }, status: 400, code: 'invalid_request', msg: 'body.max_hold_ms: expected an integer' },
  { title: 'max_hold_ms a duration string', method: 'POST', url: '/v1/locks/a/acquire', payload: { max_hold_ms: '5m' }, status: 400, code: 'invalid_request', msg: 'body.max_hold_ms: expected number' },
  { title: 'revoke with an unknown field', method: 'POST', url: '/v1/locks/a/revoke', payload: { fencing_token: 3 }, status: 400, code: 'invalid_request', msg: 'body.fencing_token: unknown field' },
  { title: 'revoke with a bad session_id', method: 'POST', url: '/v1/locks/a/revoke', payload: { session_id: 'a b' }, status: 400, code: 'invalid_request', msg: 'body.session_id' },
  { title: 'lock_delay_ms too long', method: 'POST', url: '/v1/sessions', payload: { lock_delay_ms: 60_001 }, status: 400, code: 'invalid_request', msg: 'body.lock_delay_ms' },
  { title: 'owner 257 bytes', method: 'POST', url: '/v1/sessions', payload: { owner: 'é'.repeat(129) }, status: 400, code: 'invalid_request', msg: 'body.owner: must be at most 256 bytes' },
  { title: 'owner lone surrogate', method: 'POST', url: '/v1/sessions', headers: J, payload: '{"owner": "\\ud800"}', status: 400, code: 'invalid_request', msg: 'body.owner' },
  { title: 'renew without body', method: 'POST', url: '/v1/locks/a/renew', status: 400, code: 'invalid_request', msg: 'body: expected a JSON object' },
  { title: 'renew without session_id', method: 'POST', url: '/v1/locks/a/renew', payload: {}, status: 400, code: 'invalid_request', msg: 'body.session_id: required' },
  { title: 'session_id with spaces', method: 'POST', url: '/v1/locks/a/renew', payload: { session_id: 'a b' }, status: 400, code: 'invalid_request', msg: 'body.session_id' },
  { title: 'fencing_token zero', method: 'POST', url: '/v1/locks/a/release', payload: { session_id: 's1', fencing_token: 0 }, status: 400, code: 'invalid_request', msg: 'body.fencing_token: must be >= 1' },
  { title: 'fencing_token unsafe', method: 'POST', url: '/v1/locks/a/release', payload: { session_id: 's1', fencing_token: 2 ** 53 }, status: 400, code: 'invalid_request', msg: 'body.fencing_token' },
  { title: 'keepalive with a field', method: 'POST', url: '/v1/sessions/s1/keepalive', payload: { ttl_ms: 5000 }, status: 400, code: 'invalid_request', msg: 'body.ttl_ms: unknown field' },
  { title: 'member api not a URL', method: 'POST', url: '/v1/cluster/members', payload: { id: 'n4', api: 'localhost:7004', peer: 'http://h:1' }, status: 400, code: 'invalid_request', msg: 'body.api: expected an http(s) URL' },
  { title: 'member id with slash', method: 'POST', url: '/v1/cluster/members', payload: { id: '../n4', api: 'http://h:2', peer: 'http://h:1' }, status: 400, code: 'invalid_request', msg: 'body.id' },
  { title: 'transfer to number', method: 'POST', url: '/v1/cluster/transfer-leadership', payload: { to: 3 }, status: 400, code: 'invalid_request', msg: 'body.to' },
  // names
  { title: 'empty name', method: 'GET', url: '/v1/locks/', status: 400, code: 'invalid_request', msg: 'path.name: lock name must not be empty' },
  { title: 'empty name before action', method: 'POST', url: '/v1/locks//acquire', status: 400, code: 'invalid_request', msg: 'path.name' },
  { title: '256-byte name is fine', method: 'GET', url: `/v1/locks/${'a'.repeat(256)}`, status: 200, code: '' },
  { title: '257-byte name', method: 'GET', url: `/v1/locks/${'a'.repeat(257)}`, status: 400, code: 'invalid_request', msg: '257 bytes' },
  { title: 'huge encoded name', method: 'POST', url: `/v1/locks/${'%41'.repeat(2000)}/acquire`, status: 400, code: 'invalid_request', msg: 'path.name' },
  { title: 'name with space', method: 'GET', url: '/v1/locks/a%20b', status: 400, code: 'invalid_request', msg: 'may contain only' },
  { title: 'name with ".." segment', method: 'POST', url: '/v1/locks/billing%2F..%2Fadmin/acquire', status: 400, code: 'invalid_request', msg: '".."' },
  { title: 'name "."', method: 'GET', url: '/v1/locks/a%2F.', status: 400, code: 'invalid_request', msg: '"."' },
  { title: 'name with NUL', method: 'GET', url: '/v1/locks/a%00b', status: 400, code: 'invalid_request', msg: 'may contain only' },
  { title: 'name __proto__ is just a name', method: 'GET', url: '/v1/locks/__proto__', status: 200, code: '' },
  { title: 'name with unicode', method: 'GET', url: '/v1/locks/%C3%A9', status: 400, code: 'invalid_request', msg: 'may contain only' },
  { title: 'bad percent-encoding in name', method: 'GET', url: '/v1/locks/a%zz', status: 400, code: 'invalid_request', msg: 'percent-encoding' },
  { title: 'truncated percent-encoding', method: 'POST', url: '/v1/locks/a%E2%82/acquire', status: 400, code: 'invalid_request', msg: 'percent-encoding' },
  { title: 'bad percent-encoding in session id', method: 'GET', url: '/v1/sessions/%E0%A4%A', status: 400, code: 'invalid_request', msg: 'percent-encoding' },
  { title: 'session id over 1 KiB', method: 'GET', url: `/v1/sessions/${'a'.repeat(1100)}`, status: 400, code: 'invalid_request', msg: 'path: a path parameter is too long' },
  { title: '128-char session id is well-formed', method: 'GET', url: `/v1/sessions/${'a'.repeat(128)}`, status: 404, code: 'session_not_found' },
  { title: '129-char session id', method: 'GET', url: `/v1/sessions/${'a'.repeat(129)}`, status: 400, code: 'invalid_request', msg: 'path.id' },
  { title: 'bad session id', method: 'GET', url: '/v1/sessions/a%20b', status: 400, code: 'invalid_request', msg: 'path.id' },
  // queries and headers
  { title: 'list limit zero', method: 'GET', url: '/v1/locks?limit=0', status: 400, code: 'invalid_request', msg: 'query.limit: must be >= 1' },
  { title: 'list limit too big', method: 'GET', url: '/v1/locks?limit=10001', status: 400, code: 'invalid_request', msg: 'query.limit: must be <= 10000' },
  { title: 'list limit twice', method: 'GET', url: '/v1/locks?limit=1&limit=2', status: 400, code: 'invalid_request', msg: 'query.limit' },
  { title: 'list bad prefix', method: 'GET', url: '/v1/locks?prefix=a%20b', status: 400, code: 'invalid_request', msg: 'query.prefix' },
  { title: 'unknown query param', method: 'GET', url: '/v1/locks/a?foo=1', status: 400, code: 'invalid_request', msg: 'query.foo: unknown field' },
  { title: 'bad consistency', method: 'GET', url: '/v1/locks/a?consistency=eventual', status: 400, code: 'invalid_request', msg: 'query.consistency' },
  { title: 'check without token', method: 'GET', url: '/v1/locks/a/check', status: 400, code: 'invalid_request', msg: 'query.fencing_token: required' },
  { title: 'check with -1', method: 'GET', url: '/v1/locks/a/check?fencing_token=-1', status: 400, code: 'invalid_request', msg: 'query.fencing_token' },
  { title: 'check with 1e3', method: 'GET', url: '/v1/locks/a/check?fencing_token=1e3', status: 400, code: 'invalid_request', msg: 'query.fencing_token' },
  { title: 'empty Idempotency-Key', method: 'POST', url: '/v1/sessions', headers: { 'idempotency-key': '' }, status: 400, code: 'invalid_request', msg: 'Idempotency-Key' },
  { title: '129-byte Idempotency-Key', method: 'POST', url: '/v1/sessions', headers: { 'idempotency-key': 'k'.repeat(129) }, status: 400, code: 'invalid_request', msg: 'Idempotency-Key' },
  { title: '128-byte Idempotency-Key is fine', method: 'POST', url: '/v1/sessions', headers: { 'idempotency-key': 'k'.repeat(128) }, status: 201, code: '' },
];

describe('validation: the issue\'s bad inputs', () => {
  const { app } = makeApp();
  after(() => app.close());
  for (const c of cases) {
    it(`${c.title} → ${c.status}${c.code ? ` ${c.code}` : ''}`, async () => {
      const r = await app.inject({ method: c.method, url: c.url, ...(c.headers ? { headers: c.headers } : {}), ...(c.payload !== undefined ? { payload: c.payload } : {}) });
      if (c.code === '') assert.equal(r.statusCode, c.status, r.body);
      else assertError(r, c.status, c.code, c.msg);
    });
  }
});

describe('validation: dot segments over a real socket', () => {
  // inject() normalises "." and ".." like a browser would; a raw HTTP client need not, so
  // this runs against a listening server to see what the router really receives.
  it('raw ".." and "." segments in a name are refused, not resolved', async () => {
    const { app } = makeApp();
    let client: Client | undefined;
    try {
      client = new Client(await app.listen({ host: '127.0.0.1', port: 0 }));
      for (const [method, path] of [['GET', '/v1/locks/..'], ['GET', '/v1/locks/%2E%2E'], ['POST', '/v1/locks/a/../b/acquire'], ['POST', '/v1/locks/./acquire'], ['GET', '/v1/locks/a/./b']] as const) {
        const res = await client.request({ path, method });
        const text = await res.body.text();
        assertError({ statusCode: res.statusCode, body: text, headers: res.headers }, 400, 'invalid_request', 'path segments');
      }
    } finally {
      await client?.close();
      await app.close();
    }
  });
});

describe('validation: 1,000 garbage requests at once', () => {
  it('each gets a 4xx in the error shape and the server still serves', async () => {
    const seed = testSeed('FUZZ_SEED', { what: '1,000 garbage requests', replay: 'node --test dist/test/api/validation.test.js' });
    const { app, service } = makeApp();
    try {
      const segment = fc.oneof(
        fc.string({ maxLength: 12 }).map((s) => encodeURIComponent(s)),
        fc.constantFrom('..', '.', '%', '%zz', '%00', '__proto__', 'acquire', 'check', ''),
        fc.string({ minLength: 300, maxLength: 400 }).map((s) => encodeURIComponent(s)),
      );
      const path = fc.tuple(
        fc.constantFrom('/v1/locks/', '/v1/sessions/', '/v1/cluster/members/', '/v1/', '/', '/v1/locks?prefix='),
        fc.array(segment, { maxLength: 4 }),
        fc.constantFrom('', '/acquire', '/renew', '/release', '/check', '/keepalive', '?limit=-3', '?consistency=x', '?fencing_token=abc'),
      ).map(([a, segs, b]) => a + segs.join('/') + b);
      const garbageBody = fc.oneof(
        fc.json().filter((j) => !/^\{\}$|^\{"(ttl_ms|owner|wait_ms)"/.test(j)),
        fc.string({ maxLength: 200 }),
        fc.constantFrom('{', '{"ttl_ms":', 'nul', '[]', '{"__proto__":{}}', '{"session_id":{"$gt":""}}'),
        fc.dictionary(fc.string({ maxLength: 8 }), fc.anything({ maxDepth: 2 }), { minKeys: 1, maxKeys: 4 }).map((o) => JSON.stringify(o) ?? '{}'),
      );
      const req = fc.record({
        method: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH'),
        url: path,
        body: garbageBody,
        contentType: fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8', 'multipart/form-data'),
      });
      const reqs = fc.sample(req, { numRuns: 1000, seed });
      // Sessions that garbage might legitimately name do not exist, so nothing may succeed
      // except reads/acquires of a syntactically valid name, which we tolerate (2xx).
      const results = await Promise.all(
        reqs.map((r) => app.inject({ method: r.method as 'GET', url: r.url, headers: { 'content-type': r.contentType }, payload: r.method === 'GET' ? undefined : r.body }).then((res) => ({ r, res }))),
      );
      let fourxx = 0;
      for (const { r, res } of results) {
        assert.ok(res.statusCode < 500, `5xx for ${JSON.stringify(r)}: ${res.body}`);
        if (res.statusCode >= 400) {
          fourxx++;
          const b = JSON.parse(res.body) as { error?: { code?: unknown; message?: unknown } };
          assert.equal(typeof b.error?.code, 'string', `no error shape for ${JSON.stringify(r)}: ${res.body}`);
          assert.equal(typeof b.error?.message, 'string');
        }
      }
      assert.ok(fourxx > 900, `most garbage must be refused (refused ${fourxx})`);
      assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      const ok = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { ttl_ms: 2000 } });
      assert.equal(ok.statusCode, 201, 'the server still serves real requests');
      assert.ok(service.calls.length >= 1);
    } finally {
      await app.close();
    }
  });
});
