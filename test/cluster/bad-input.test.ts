// Bad input against real nodes over real sockets (docs/api.md "Input rules"): every kind of
// malformed REST request — through a follower (validated before any forwarding) and through
// the leader — gets a 4xx in the contract's error shape; 1,000 seeded garbage requests at
// once change nothing and the nodes keep serving; garbage on the PEER port (random bytes,
// bad msgpack, wrong version, wrong cluster, unknown peer, oversized, not even HTTP) is
// refused while the node stays up and the cluster keeps committing in the same term.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';
import { seededRng, type Rng } from '../../src/raft/core/rng.js';
import { encodeEnvelope } from '../../src/transport/codec.js';
import { CONTENT_TYPE as PEER_CONTENT_TYPE, MESSAGES_PATH, SNAPSHOT_PATH } from '../../src/transport/peer-server.js';
import { assertClientError, gauge, parsePrometheus, rawHttp, rawTcp, readOk } from './helpers.js';
import { testSeed } from '../support/seed.js';

const J = { 'content-type': 'application/json' };
const MIN_TTL = 100;
const MAX_TTL = 3_600_000;

interface Case {
  title: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: string;
  headers?: Record<string, string>;
  status: number;
  code: string;
  /** a piece of the message: names the field */
  msg?: string;
}

const body = (v: unknown): { body: string; headers: Record<string, string> } => ({ body: JSON.stringify(v), headers: J });
const SID = 'a'.repeat(32);

const CASES: Case[] = [
  // bodies
  { title: 'invalid JSON', method: 'POST', path: '/v1/sessions', body: '{"ttl_ms": ', headers: J, status: 400, code: 'invalid_request', msg: 'body' },
  { title: 'JSON array', method: 'POST', path: '/v1/locks/bad/acquire', body: '[1]', headers: J, status: 400, code: 'invalid_request', msg: 'body' },
  { title: 'JSON null', method: 'POST', path: '/v1/locks/bad/acquire', body: 'null', headers: J, status: 400, code: 'invalid_request', msg: 'body' },
  { title: 'text/plain', method: 'POST', path: '/v1/sessions', body: '{}', headers: { 'content-type': 'text/plain' }, status: 415, code: 'unsupported_media_type' },
  { title: 'form-encoded', method: 'POST', path: '/v1/locks/bad/acquire', body: 'wait_ms=1', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: 'unsupported_media_type' },
  { title: 'no content-type with a body', method: 'POST', path: '/v1/locks/bad/acquire', body: '{}', headers: {}, status: 415, code: 'unsupported_media_type' },
  { title: 'oversized body (70 KB)', method: 'POST', path: '/v1/sessions', ...body({ owner: 'x'.repeat(70_000) }), status: 413, code: 'payload_too_large' },
  { title: 'unknown field', method: 'POST', path: '/v1/locks/bad/acquire', ...body({ wait_ms: 0, colour: 'red' }), status: 400, code: 'invalid_request', msg: 'colour' },
  { title: '__proto__ key', method: 'POST', path: '/v1/sessions', body: '{"__proto__": {"admin": true}}', headers: J, status: 400, code: 'invalid_request', msg: '__proto__' },
  { title: 'ttl_ms as a string', method: 'POST', path: '/v1/sessions', ...body({ ttl_ms: '10s' }), status: 400, code: 'invalid_request', msg: 'body.ttl_ms' },
  { title: 'wait_ms as a boolean', method: 'POST', path: '/v1/locks/bad/acquire', ...body({ wait_ms: true }), status: 400, code: 'invalid_request', msg: 'body.wait_ms' },
  { title: 'session_id as a number', method: 'POST', path: '/v1/locks/bad/renew', ...body({ session_id: 5 }), status: 400, code: 'invalid_request', msg: 'body.session_id' },
  { title: 'owner as an object', method: 'POST', path: '/v1/locks/bad/acquire', ...body({ owner: { a: 1 } }), status: 400, code: 'invalid_request', msg: 'body.owner' },
  { title: 'ttl_ms below min', method: 'POST', path: '/v1/sessions', ...body({ ttl_ms: MIN_TTL - 1 }), status: 400, code: 'invalid_request', msg: 'body.ttl_ms' },
  { title: 'ttl_ms above max', method: 'POST', path: '/v1/locks/bad/acquire', ...body({ ttl_ms: MAX_TTL + 1 }), status: 400, code: 'invalid_request', msg: 'body.ttl_ms' },
  { title: 'ttl_ms negative', method: 'POST', path: '/v1/sessions', ...body({ ttl_ms: -5 }), status: 400, code: 'invalid_request', msg: 'body.ttl_ms' },
  { title: 'ttl_ms fractional', method: 'POST', path: '/v1/sessions', ...body({ ttl_ms: 1500.5 }), status: 400, code: 'invalid_request', msg: 'body.ttl_ms' },
  { title: 'ttl_ms 1e400', method: 'POST', path: '/v1/sessions', body: '{"ttl_ms": 1e400}', headers: J, status: 400, code: 'invalid_request', msg: 'body.ttl_ms' },
  { title: 'wait_ms huge', method: 'POST', path: '/v1/locks/bad/acquire', ...body({ wait_ms: 1e12 }), status: 400, code: 'invalid_request', msg: 'body.wait_ms' },
  { title: 'wait_ms just over 300000', method: 'POST', path: '/v1/locks/bad/acquire', ...body({ wait_ms: 300_001 }), status: 400, code: 'invalid_request', msg: 'body.wait_ms' },
  { title: 'fencing_token 0', method: 'POST', path: '/v1/locks/bad/release', ...body({ session_id: SID, fencing_token: 0 }), status: 400, code: 'invalid_request', msg: 'body.fencing_token' },
  { title: 'fencing_token 2^53', method: 'POST', path: '/v1/locks/bad/release', ...body({ session_id: SID, fencing_token: 2 ** 53 }), status: 400, code: 'invalid_request', msg: 'body.fencing_token' },
  { title: 'check without a token', method: 'GET', path: '/v1/locks/bad/check', status: 400, code: 'invalid_request', msg: 'fencing_token' },
  { title: 'check with token "x"', method: 'GET', path: '/v1/locks/bad/check?fencing_token=x', status: 400, code: 'invalid_request', msg: 'fencing_token' },
  { title: 'unknown query parameter', method: 'GET', path: '/v1/locks/bad?colour=red', status: 400, code: 'invalid_request', msg: 'colour' },
  { title: 'list limit 0', method: 'GET', path: '/v1/locks?limit=0', status: 400, code: 'invalid_request', msg: 'limit' },
  { title: 'bad consistency', method: 'GET', path: '/v1/locks/bad?consistency=eventual', status: 400, code: 'invalid_request', msg: 'consistency' },
  { title: 'Idempotency-Key of 129 bytes', method: 'POST', path: '/v1/sessions', body: '{}', headers: { ...J, 'idempotency-key': 'k'.repeat(129) }, status: 400, code: 'invalid_request', msg: 'Idempotency-Key' },
  // names
  { title: 'empty name', method: 'POST', path: '/v1/locks//acquire', status: 400, code: 'invalid_request', msg: 'path.name' },
  { title: '257-byte name', method: 'GET', path: `/v1/locks/${'a'.repeat(257)}`, status: 400, code: 'invalid_request', msg: 'path.name' },
  { title: 'name with a space', method: 'POST', path: '/v1/locks/a%20b/acquire', status: 400, code: 'invalid_request', msg: 'path.name' },
  { title: 'name with a raw ".." segment', method: 'POST', path: '/v1/locks/billing/../admin/acquire', status: 400, code: 'invalid_request', msg: '..' },
  { title: 'name with an encoded ".." segment', method: 'GET', path: '/v1/locks/billing%2F..%2Fadmin', status: 400, code: 'invalid_request', msg: '..' },
  { title: 'name with NUL', method: 'POST', path: '/v1/locks/a%00b/acquire', status: 400, code: 'invalid_request', msg: 'path.name' },
  { title: 'name with unicode', method: 'GET', path: '/v1/locks/%C3%A9', status: 400, code: 'invalid_request', msg: 'path.name' },
  { title: 'bad percent-encoding', method: 'GET', path: '/v1/locks/a%zz', status: 400, code: 'invalid_request', msg: 'percent-encoding' },
  { title: 'truncated percent-encoding', method: 'POST', path: '/v1/locks/a%E2%82/acquire', status: 400, code: 'invalid_request', msg: 'percent-encoding' },
  { title: 'huge encoded name', method: 'POST', path: `/v1/locks/${'%41'.repeat(3000)}/acquire`, status: 400, code: 'invalid_request', msg: 'path' },
  { title: 'list prefix with a space', method: 'GET', path: '/v1/locks?prefix=a%20b', status: 400, code: 'invalid_request', msg: 'prefix' },
  // sessions and routes
  { title: 'session id with a space', method: 'POST', path: '/v1/sessions/a%20b/keepalive', status: 400, code: 'invalid_request', msg: 'path.id' },
  { title: 'session id of 129 chars', method: 'GET', path: `/v1/sessions/${'a'.repeat(129)}`, status: 400, code: 'invalid_request', msg: 'path.id' },
  { title: 'unknown session', method: 'GET', path: `/v1/sessions/${SID}`, status: 404, code: 'session_not_found' },
  { title: 'unknown route', method: 'GET', path: '/v2/locks', status: 404, code: 'not_found' },
  { title: 'wrong method', method: 'DELETE', path: '/v1/locks/bad/acquire', status: 404, code: 'not_found' },
  { title: 'transfer to a number', method: 'POST', path: '/v1/cluster/transfer-leadership', ...body({ to: 3 }), status: 400, code: 'invalid_request', msg: 'body.to' },
];

/** One request that is invalid by construction, drawn from `rng` (unparsable bytes, wrong content types, unknown fields, wrong types, out-of-range numbers, …: the cases below). */
function garbage(rng: Rng, i: number): { method: string; path: string; body?: string | Uint8Array; headers: Record<string, string> } {
  const pick = <T>(xs: readonly T[]): T => xs[rng.int(0, xs.length)]!;
  const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => rng.int(0, 256));
  const goodName = `fuzz/${i}`;
  const route = pick([`/v1/locks/${goodName}/acquire`, `/v1/locks/${goodName}/release`, `/v1/locks/${goodName}/renew`, '/v1/sessions', `/v1/sessions/${SID}/keepalive`]);
  // each makes any name invalid wherever it lands ('..' only as a whole segment)
  const badNameChars = ['%20', '%00', '%', '%zz', '%C3%A9', '/../', '%2F..%2F', '"', '<', '\\', '%FF', '%0A'];
  switch (rng.int(0, 9)) {
    case 0: // bytes that cannot parse as JSON (a control byte first)
      return { method: 'POST', path: route, body: Buffer.concat([Buffer.from([1]), bytes(rng.int(0, 200))]), headers: J };
    case 1: // wrong content type
      return { method: 'POST', path: route, body: '{}', headers: { 'content-type': pick(['text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/msgpack', 'image/png']) } };
    case 2: // an unknown field
      return { method: 'POST', path: route, body: JSON.stringify({ [`f${rng.int(0, 1e6)}`]: rng.int(0, 10) }), headers: J };
    case 3: { // a wrong type for a known field
      const field = pick(['ttl_ms', 'wait_ms', 'session_id', 'owner', 'fencing_token']);
      // ('x' is a fine session id and owner, so those fields never draw it)
      const value = pick([null, true, [], {}, 'x', -0.5, [1, 2]].filter((v) => !((field === 'owner' || field === 'session_id') && typeof v === 'string')));
      const path = field === 'session_id' || field === 'fencing_token' ? `/v1/locks/${goodName}/release` : `/v1/locks/${goodName}/acquire`;
      return { method: 'POST', path, body: JSON.stringify(field === 'fencing_token' ? { session_id: SID, [field]: value } : { [field]: value }), headers: J };
    }
    case 4: { // numbers out of range
      const over = rng.next() < 0.5;
      const v = pick([
        { ttl_ms: over ? MAX_TTL + rng.int(1, 1e9) : rng.int(-1e6, MIN_TTL) },
        { wait_ms: over ? 300_001 + rng.int(0, 1e12) : -rng.int(1, 1e6) },
        { ttl_ms: MIN_TTL + rng.int(0, 1000) + 0.5 },
      ]);
      return { method: 'POST', path: `/v1/locks/${goodName}/acquire`, body: JSON.stringify(v), headers: J };
    }
    case 5: { // a bad lock name
      const name = `${pick(['', 'a', 'x/y'])}${pick(badNameChars)}${pick(['', 'b', '/c'])}`;
      const long = rng.next() < 0.2 ? 'n'.repeat(257 + rng.int(0, 100)) : name;
      return { method: 'POST', path: `/v1/locks/${long}/acquire`, body: '{}', headers: J };
    }
    case 6: // a bad session id
      return { method: 'POST', path: `/v1/sessions/${pick(['a%20b', '%00', 'x'.repeat(129 + rng.int(0, 50)), '%zz', 'a%2Fb'])}/keepalive`, body: '{}', headers: J };
    case 7: // an oversized body
      return { method: 'POST', path: route, body: JSON.stringify({ owner: 'o'.repeat(65 * 1024 + rng.int(0, 4096)) }), headers: J };
    default: // an unknown route or a bad Idempotency-Key
      return rng.next() < 0.5
        ? { method: pick(['GET', 'POST', 'DELETE', 'PUT', 'PATCH']), path: `/v1/${pick(['lock', 'sessionz', 'x/y/z', 'cluster/nope'])}`, headers: {} }
        : { method: 'POST', path: route, body: '{}', headers: { ...J, 'idempotency-key': 'k'.repeat(129 + rng.int(0, 100)) } };
  }
}

describe('bad input against real nodes (3-node cluster)', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  let ids: string[];

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3, session: { default_ttl_ms: 300_000, min_ttl_ms: MIN_TTL, max_ttl_ms: MAX_TTL } });
    ids = h.nodes.map((n) => n.id);
    h.startAll();
    await h.waitForLeader();
  });
  after(async () => {
    await h?.close();
  });

  async function assertServing(what: string): Promise<void> {
    for (const id of ids) assert.ok(h.node(id).proc, `${what}: ${id} is still running`);
    const l = await h.waitForLeader(10_000);
    for (const id of ids) {
      assert.equal((await h.request(id, 'GET', '/healthz')).status, 200, `${what}: healthz on ${id}`);
      const r = await h.request(id, 'POST', `/v1/locks/alive/${id}-${Date.now()}/acquire`, {});
      assert.equal(r.status, 200, `${what}: a valid acquire through ${id} (leader ${l}): ${r.text}`);
    }
  }

  it('each malformed REST request gets its 4xx and error shape, through a follower and through the leader', async () => {
    const l = await h.waitForLeader(10_000);
    const f = ids.find((x) => x !== l)!;
    for (const via of [f, l]) {
      for (const c of CASES) {
        const r = await rawHttp(h.node(via).api, c.method, c.path, c.body, c.headers ?? {});
        const ctx = `${c.title} via ${via === l ? 'leader' : 'follower'} ${via}: got ${r.status} ${r.text.slice(0, 300)}`;
        assert.equal(r.status, c.status, ctx);
        const e = (r.body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
        assert.ok(e && typeof e.message === 'string' && e.message.length > 0, ctx);
        assert.equal(e.code, c.code, ctx);
        if (c.msg) assert.ok(e.message.includes(c.msg), `${ctx}: the message should name ${c.msg}`);
        // a follower answers bad input itself: validation happens before forwarding
        if (via === f && c.status !== 404) assert.equal(r.headers['x-raftlock-forwarded'], undefined, `${ctx}: forwarded`);
      }
    }
    await assertServing('after the table');
  });

  it('"__proto__", "constructor" and friends are ordinary lock names: no prototype pollution', async () => {
    const l = await h.waitForLeader(10_000);
    const names = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', '__proto__/x'];
    const grants = new Map<string, { sid: string; token: number }>();
    for (const [i, name] of names.entries()) {
      const via = ids[i % ids.length]!;
      const r = await h.request(via, 'POST', `/v1/locks/${name}/acquire`, { owner: name });
      assert.equal(r.status, 200, `${name}: ${r.text}`);
      assert.equal(r.body.name, name);
      grants.set(name, { sid: r.body.session_id, token: r.body.fencing_token });
    }
    for (const name of names) {
      const g = await h.request(l, 'GET', `/v1/locks/${name}`);
      const holder = { session_id: grants.get(name)!.sid, owner: name, fencing_token: grants.get(name)!.token };
      assert.deepEqual(g.body, { name, held: true, holder, waiters: 0, mode: 'exclusive', holders: [{ ...holder, mode: 'exclusive' }] });
    }
    // a fresh name is still free: nothing leaked into a shared prototype
    assert.deepEqual((await h.request(l, 'GET', '/v1/locks/innocent')).body, { name: 'innocent', held: false, waiters: 0 });
    const list = await h.request(l, 'GET', '/v1/locks?limit=10000');
    const listed = (list.body.locks as { name: string }[]).map((x) => x.name);
    for (const name of names) assert.ok(listed.includes(name), `${name} listed`);
    for (const name of names) assert.equal((await h.request(l, 'POST', `/v1/locks/${name}/release`, { session_id: grants.get(name)!.sid })).status, 200);
    assert.equal((await h.request(l, 'GET', '/v1/locks/__proto__')).body.held, false);
  });

  it('1,000 seeded garbage requests at once: every answer a 4xx in the error shape, nothing applied, the nodes keep serving', async (t) => {
    const seed = testSeed('RAFTLOCK_TEST_SEED', { what: '1,000 garbage requests', print: (l) => t.diagnostic(l) });
    const rng = seededRng(seed);
    const l = await h.waitForLeader(10_000);
    const sessionsBefore = await gauge(h, l, 'raftlock_sessions_active');
    const { commit_index: commitBefore, term: termBefore } = await h.view(l);
    const reqs = Array.from({ length: 1000 }, (_, i) => ({ via: ids[i % ids.length]!, ...garbage(rng, i) }));
    const t0 = Date.now();
    const answers = await Promise.all(
      reqs.map((q) =>
        rawHttp(h.node(q.via).api, q.method, q.path, q.body, q.headers).then(
          (r) => ({ q, r, err: null as string | null }),
          (err: unknown) => ({ q, r: null, err: String(err) }),
        ),
      ),
    );
    t.diagnostic(`1,000 garbage requests answered in ${Date.now() - t0} ms`);
    for (const { q, r, err } of answers) {
      const what = `seed ${seed}: ${q.method} ${q.path.slice(0, 80)} via ${q.via} (${String(q.headers['content-type'] ?? '')})`;
      assert.equal(err, null, `${what}: ${err}`);
      assertClientError({ status: r!.status, body: r!.body, text: r!.text, headers: new Headers() }, what);
    }
    // nothing was applied: no session opened, no lock under the fuzz prefix, no command
    // committed (unless an election under load committed its no-op: then the term moved)
    const after = await h.view(l);
    if (after.term === termBefore) assert.equal(after.commit_index, commitBefore, `seed ${seed}: garbage committed ${after.commit_index - commitBefore} entries`);
    assert.equal(await gauge(h, l, 'raftlock_sessions_active'), sessionsBefore);
    const fuzz = await readOk(h, l, '/v1/locks?prefix=fuzz/');
    assert.deepEqual(fuzz.body, { locks: [] }, `seed ${seed}`);
    await assertServing(`seed ${seed}: after 1,000 garbage requests`);
  });

  it('garbage on the peer port is refused; the node is unharmed and the cluster keeps committing in the same term', async (t) => {
    const l = await h.waitForLeader(10_000);
    const termBefore = (await h.view(l)).term;
    const f = ids.find((x) => x !== l)!;
    const P = { 'content-type': PEER_CONTENT_TYPE };
    const rng = seededRng(testSeed('RAFTLOCK_TEST_SEED', { what: 'peer-port garbage', print: (l) => t.diagnostic(l) }));
    /** every refusal below is for one reason only: the rest of the envelope is well-formed,
     *  a heartbeat from a real member, addressed to `target` */
    const casesFor = (target: string) => {
      const sender = ids.find((x) => x !== target)!;
      const elsewhere = ids.find((x) => x !== target && x !== sender)!;
      const env = (o: { cluster?: string; from?: string; to?: string }): Uint8Array => {
        const from = o.from ?? sender;
        const to = o.to ?? target;
        return encodeEnvelope({ cluster: o.cluster ?? 'test', from, to, messages: [{ from, to, term: termBefore, type: 'heartbeat', commit: 0, ctx: 0 }] });
      };
      const cases: { title: string; method?: string; path?: string; body?: Uint8Array; headers?: Record<string, string>; status: number[] }[] = [
        { title: 'random bytes', body: Uint8Array.from({ length: 512 }, () => rng.int(0, 256)), status: [400] },
        { title: 'empty body', body: new Uint8Array(0), status: [400] },
        { title: 'unknown wire version', body: Uint8Array.from([99, ...env({}).subarray(1)]), status: [400] },
        { title: 'truncated msgpack', body: env({}).subarray(0, 12), status: [400] },
        { title: 'msgpack that is not an envelope', body: Uint8Array.from([1, 0x2a]), status: [400] },
        { title: 'wrong cluster name', body: env({ cluster: 'someone-else' }), status: [403] },
        { title: 'unknown sender', body: env({ from: 'intruder' }), status: [403] },
        { title: 'addressed to another node', body: env({ to: elsewhere }), status: [400, 403] },
        { title: 'oversized (declared)', body: new Uint8Array(16), headers: { ...P, 'content-length': String(17 * 2 ** 20) }, status: [413] },
        { title: 'snapshot chunk of random bytes', path: SNAPSHOT_PATH, body: Uint8Array.from({ length: 300 }, () => rng.int(0, 256)), status: [400] },
        { title: 'GET on the messages route', method: 'GET', status: [405] },
        // well-shaped, so the wire takes it (204); its protocol rule is the core's, which
        // refuses it before the handler: a vote at a higher term would otherwise end the
        // leader's term (checked at the end: same term)
        { title: 'a vote whose lastTerm is above its term', body: encodeEnvelope({ cluster: 'test', from: sender, to: target, messages: [{ from: sender, to: target, term: termBefore + 5, type: 'vote', lastIndex: 1_000_000, lastTerm: termBefore + 6 }] }), status: [204] },
        { title: 'unknown route', path: '/raft/v2/anything', body: new Uint8Array(4), status: [404] },
      ];
      return cases;
    };
    for (const target of [f, l]) {
      for (const c of casesFor(target)) {
        let r: { status: number; text: string };
        try {
          r = await rawHttp(h.node(target).peer, c.method ?? 'POST', c.path ?? MESSAGES_PATH, c.body, c.headers ?? P);
        } catch (err) {
          // the declared-oversize case may see the server close the socket after its 413
          if (c.status.includes(413)) continue;
          throw err;
        }
        assert.ok(c.status.includes(r.status), `peer ${c.title} → ${target}: got ${r.status} ${r.text.slice(0, 200)}`);
      }
      // an actually oversized body, sent chunked (no content-length to refuse it early)
      const big = await rawHttp(h.node(target).peer, 'POST', MESSAGES_PATH, new Uint8Array(17 * 2 ** 20 + 1), { ...P, 'transfer-encoding': 'chunked' }).catch(() => ({ status: 413, text: '(closed after refusing)' }));
      assert.equal(big.status, 413, `chunked oversized body → ${target}: ${big.text}`);
      // not HTTP at all
      const junk = await rawTcp(h.node(target).peer, Buffer.from('\u0000\u0001GARBAGE nonsense\r\n\r\n\u00ff\u00fe'));
      assert.match(junk, /^HTTP\/1\.1 400/, `raw TCP junk → ${target}`);
    }
    const scrape = await h.request(f, 'GET', '/metrics');
    const rejected = parsePrometheus(scrape.text).samples.filter((x) => x.name === 'raftlock_transport_requests_rejected_total');
    const total = rejected.reduce((a, x) => a + x.value, 0);
    t.diagnostic(`follower ${f} counted ${total} rejected peer requests (${rejected.map((x) => `${x.labels.reason}=${x.value}`).join(' ')})`);
    assert.ok(total >= 10, `the follower counts rejected peer requests: ${total}`);
    const refused = parsePrometheus(scrape.text).samples.find((x) => x.name === 'raftlock_raft_messages_refused_total' && x.labels.reason === 'bad_field');
    assert.ok((refused?.value ?? 0) >= 1, `the follower's core refused the protocol-breaking vote: ${JSON.stringify(refused)}`);

    // unharmed: same leader, same term, and writes through every node still commit
    await assertServing('after peer-port garbage');
    await eventually(async () => (await h.view(f)).applied_index === (await h.view(l)).commit_index || null, 5000, 'the follower to keep applying');
    assert.equal((await h.view(l)).term, termBefore, 'peer garbage caused an election');
    assert.equal(await h.waitForLeader(5000), l);
  });
});
