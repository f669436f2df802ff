// Token rights per lock-name prefix (docs/security.md "API tokens"): the table of token ×
// route × expected outcome, through the real REST server and the real security hooks
// (inject, no ports). 401 = unauthenticated, 403 = permission_denied, 'ok' = authorized
// (whatever the fake service then answers, never 401/403, and the service saw the token's
// name).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { assertError } from '../api/helpers.js';
import type { FakeService } from '../api/fake-service.js';
import { TokenStore, sha256Hex } from '../../src/security/tokens.js';
import { authProblem } from '../../src/security/node-security.js';
import { bearer, configFor, securedApp, tempDir, TOKENS, writeTokens, type TokenName } from './helpers.js';

type Outcome = 400 | 401 | 403 | 'ok';
type Who = 'none' | 'bogus' | TokenName;
interface Row {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  body?: unknown;
  /** outcome per caller, in the order of WHO */
  want: [none: Outcome, bogus: Outcome, reader: Outcome, billing: Outcome, billingAdmin: Outcome, ops: Outcome];
}
const WHO: Who[] = ['none', 'bogus', 'reader', 'billing', 'billingAdmin', 'ops'];
const A = 401, D = 403, ok = 'ok' as const;

const TABLE: Row[] = [
  { method: 'POST', url: '/v1/sessions', body: {}, want: [A, A, D, ok, ok, ok] },
  { method: 'POST', url: '/v1/sessions/s1/keepalive', want: [A, A, D, ok, ok, ok] },
  { method: 'GET', url: '/v1/sessions/s1', want: [A, A, ok, ok, ok, ok] },
  { method: 'DELETE', url: '/v1/sessions/s1', want: [A, A, D, ok, ok, ok] },
  { method: 'POST', url: '/v1/locks/billing/a/acquire', body: {}, want: [A, A, D, ok, ok, ok] },
  { method: 'POST', url: '/v1/locks/billing%2Fa/acquire', body: {}, want: [A, A, D, ok, ok, ok] },
  { method: 'POST', url: '/v1/locks/payroll/a/acquire', body: {}, want: [A, A, D, D, D, ok] },
  { method: 'POST', url: '/v1/locks/billing2/a/acquire', body: {}, want: [A, A, D, D, D, ok] },
  { method: 'POST', url: '/v1/locks/billing/a/renew', body: { session_id: 's1' }, want: [A, A, D, ok, ok, ok] },
  { method: 'POST', url: '/v1/locks/billing/a/release', body: { session_id: 's1' }, want: [A, A, D, ok, ok, ok] },
  { method: 'POST', url: '/v1/locks/payroll/a/release', body: { session_id: 's1' }, want: [A, A, D, D, D, ok] },
  { method: 'GET', url: '/v1/locks/billing/a', want: [A, A, ok, ok, ok, ok] },
  // revoking another session's grant is an operator's act: admin on the name
  { method: 'POST', url: '/v1/locks/billing/a/revoke', body: {}, want: [A, A, D, D, ok, ok] },
  { method: 'POST', url: '/v1/locks/payroll/a/revoke', body: { session_id: 's1' }, want: [A, A, D, D, D, ok] },
  { method: 'GET', url: '/v1/locks/payroll/a', want: [A, A, ok, D, D, ok] },
  { method: 'GET', url: '/v1/locks/billing/a/check?fencing_token=1', want: [A, A, ok, ok, ok, ok] },
  { method: 'GET', url: '/v1/locks/payroll/a/check?fencing_token=1', want: [A, A, ok, D, D, ok] },
  { method: 'GET', url: '/v1/locks?prefix=billing/', want: [A, A, ok, ok, ok, ok] },
  { method: 'GET', url: '/v1/locks?prefix=bil', want: [A, A, ok, D, D, ok] },
  { method: 'GET', url: '/v1/locks', want: [A, A, ok, D, D, ok] },
  { method: 'GET', url: '/v1/cluster', want: [A, A, ok, ok, ok, ok] },
  { method: 'GET', url: '/metrics', want: [A, A, ok, ok, ok, ok] },
  { method: 'POST', url: '/v1/cluster/members', body: { id: 'n4', api: 'http://127.0.0.1:17004', peer: 'http://127.0.0.1:17104' }, want: [A, A, D, D, D, ok] },
  { method: 'POST', url: '/v1/cluster/members/n4/promote', want: [A, A, D, D, D, ok] },
  { method: 'DELETE', url: '/v1/cluster/members/n1', want: [A, A, D, D, D, ok] },
  { method: 'POST', url: '/v1/cluster/transfer-leadership', body: {}, want: [A, A, D, D, D, ok] },
  { method: 'GET', url: '/healthz', want: [ok, ok, ok, ok, ok, ok] },
  { method: 'GET', url: '/readyz', want: [ok, ok, ok, ok, ok, ok] },
  // authentication comes before routing and validation: an anonymous caller learns
  // nothing; an authenticated one gets validation (400) before rights (403)
  { method: 'GET', url: '/v1/no-such-route', want: [A, A, ok, ok, ok, ok] },
  { method: 'POST', url: '/v1/locks/payroll/a/acquire', body: { bogus: 1 }, want: [A, A, 400, 400, 400, 400] },
];

function headersFor(who: Who): Record<string, string> {
  if (who === 'none') return {};
  if (who === 'bogus') return { authorization: 'Bearer not-a-real-token-at-all' };
  return bearer(who);
}

describe('token rights: token × route × expected status', () => {
  const tmp = tempDir('rights');
  let app: FastifyInstance;
  let service: FakeService;
  before(async () => {
    ({ app, service } = await securedApp(tmp.dir, { auth: { tokens_file: writeTokens(tmp.dir) } }));
  });
  after(async () => {
    await app.close();
    tmp.cleanup();
  });

  for (const row of TABLE) {
    it(`${row.method} ${row.url}${row.body !== undefined ? ` ${JSON.stringify(row.body)}` : ''}`, async () => {
      for (const [i, who] of WHO.entries()) {
        const want = row.want[i]!;
        const before = service.calls.length;
        const res = await app.inject({
          method: row.method,
          url: row.url,
          headers: { ...headersFor(who), ...(row.body !== undefined ? { 'content-type': 'application/json' } : {}) },
          ...(row.body !== undefined ? { payload: JSON.stringify(row.body) } : {}),
        });
        const ctx = `${who}: ${row.method} ${row.url} → ${res.statusCode} ${res.body.slice(0, 200)}`;
        if (want === 400) {
          assertError(res, 400, 'invalid_request');
        } else if (want === 401) {
          assertError(res, 401, 'unauthenticated');
          assert.equal(service.calls.length, before, `${ctx}: the service must not be called`);
        } else if (want === 403) {
          assertError(res, 403, 'permission_denied');
          assert.equal(service.calls.length, before, `${ctx}: the service must not be called`);
        } else {
          assert.ok(res.statusCode !== 401 && res.statusCode !== 403 && res.statusCode < 500, ctx);
          const call = service.calls[service.calls.length - 1];
          if (service.calls.length > before && call?.ctx && who !== 'none' && who !== 'bogus') assert.equal(call.ctx.principal, who, `${ctx}: principal`);
        }
      }
    });
  }

  it('Authorization header forms: scheme is case-insensitive; anything but Bearer is 401', async () => {
    const get = (authorization: string) => app.inject({ method: 'GET', url: '/v1/cluster', headers: { authorization } });
    assert.equal((await get(`bearer ${TOKENS.reader.secret}`)).statusCode, 200);
    assert.equal((await get(`Bearer ${TOKENS.reader.secret}  `)).statusCode, 200);
    for (const bad of [`Basic ${Buffer.from('a:b').toString('base64')}`, 'Bearer', 'Bearer ', `Bearer ${TOKENS.reader.secret} extra`, `Token ${TOKENS.reader.secret}`, 'Bearer ' + 'x'.repeat(5000)]) {
      assertError(await get(bad), 401, 'unauthenticated');
    }
  });
});

describe('tokens.json validation', () => {
  const h = sha256Hex('x');
  const bad: [string, unknown, RegExp][] = [
    ['not an object', [], /tokens\.json: .*expected object/],
    ['unknown field', { tokens: [], extra: 1 }, /tokens\.json: extra: unknown field/],
    ['bad hash', { tokens: [{ name: 'a', sha256: 'abc', rights: [] }] }, /tokens\[0\]\.sha256: must be 64 hex/],
    ['bad name', { tokens: [{ name: 'a b', sha256: h, rights: [] }] }, /tokens\[0\]\.name/],
    ['bad right', { tokens: [{ name: 'a', sha256: h, rights: [{ prefix: '', allow: ['write'] }] }] }, /tokens\[0\]\.rights\[0\]\.allow\[0\]/],
    ['bad prefix', { tokens: [{ name: 'a', sha256: h, rights: [{ prefix: 'a b', allow: ['read'] }] }] }, /prefix/],
    ['duplicate name', { tokens: [{ name: 'a', sha256: h, rights: [] }, { name: 'a', sha256: sha256Hex('y'), rights: [] }] }, /duplicate token name "a"/],
    ['duplicate hash', { tokens: [{ name: 'a', sha256: h, rights: [] }, { name: 'b', sha256: h.toUpperCase(), rights: [] }] }, /listed twice/],
  ];
  for (const [title, json, re] of bad) {
    it(title, () => assert.throws(() => TokenStore.parse(json), (e: Error) => e.name === 'TokensFileError' && re.test(e.message) && !e.message.includes('\n')));
  }
  it('rights imply: admin ⊇ lock ⊇ read; a prefix is a byte prefix', () => {
    const s = TokenStore.parse({ tokens: [{ name: 'b', sha256: h, rights: [{ prefix: 'billing/', allow: ['admin'] }, { prefix: 'pub', allow: ['read'] }] }] });
    assert.equal(s.allows('b', 'read', 'billing/x'), true);
    assert.equal(s.allows('b', 'lock', 'billing/x'), true);
    assert.equal(s.allows('b', 'admin', 'billing/x'), true);
    assert.equal(s.allows('b', 'admin', undefined), false, 'cluster operations need admin on ""');
    assert.equal(s.allows('b', 'read', 'public/x'), true);
    assert.equal(s.allows('b', 'lock', 'public/x'), false);
    assert.equal(s.allows('nobody', 'read', 'public/x'), false);
  });
});

describe('auth rule: off only when every API listens on loopback', () => {
  const tmp = tempDir('authrule');
  after(() => tmp.cleanup());
  const nodes = (host: string) => ({ nodes: [{ id: 'n1', api: `http://${host}:7801`, peer: 'http://127.0.0.1:7802' }] });
  it('loopback without an auth block: allowed', () => {
    assert.equal(authProblem(configFor(tmp.dir)), null);
    assert.equal(authProblem(configFor(tmp.dir, { nodes: [{ id: 'n1', api: 'http://localhost:7801', peer: 'http://127.0.0.1:7802', listen_api: '[::1]:7801' }] })), null);
  });
  it('a non-loopback API without an auth block: refused with a clear line', () => {
    const p = authProblem(configFor(tmp.dir, nodes('10.1.2.3')));
    assert.match(p ?? '', /auth: required because node n1's API listens on 10\.1\.2\.3/);
    assert.match(authProblem(configFor(tmp.dir, { nodes: [{ id: 'n1', api: 'http://127.0.0.1:7801', peer: 'http://127.0.0.1:7802', listen_api: '0.0.0.0:7801' }] })) ?? '', /0\.0\.0\.0/);
  });
  it('explicit auth.disabled or a tokens file: allowed', () => {
    assert.equal(authProblem(configFor(tmp.dir, { ...nodes('10.1.2.3'), auth: { disabled: true } })), null);
    assert.equal(authProblem(configFor(tmp.dir, { ...nodes('10.1.2.3'), auth: { tokens_file: 'tokens.json' } })), null);
  });
});
