// Fuzzing with fast-check (bad input gets a clear error, never a crash: docs/api.md "Input
// rules"): every REST route's body (and path, query and headers around it) through the real
// server with auth on, and the peer decoders (decodeEnvelope / decodeSnapshotChunk) on
// random, mutated and structure-aware input. Properties: no crash, no hang (each call is
// bounded by a deadline), no 5xx except 503/504, and every error in the contract's shape.
// ≥ 10,000 cases each. Replay a run with FC_SEED=<seed> (printed first).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import type { FastifyInstance } from 'fastify';
import { decodeEnvelope, decodeSnapshotChunk, encodeEnvelope, encodeSnapshotChunk, WIRE_VERSION } from '../../src/transport/codec.js';
import { messageArb, seedFor } from '../transport/arbitraries.js';
import { bearer, securedApp, tempDir, writeTokens } from './helpers.js';

const ROUTE_CASES = Number(process.env.FUZZ_ROUTE_CASES ?? 10_000);
const PEER_CASES = Number(process.env.FUZZ_PEER_CASES ?? 10_000);

// ---- REST routes ----

const ROUTES: { method: 'GET' | 'POST' | 'DELETE'; url: string }[] = [
  { method: 'POST', url: '/v1/sessions' },
  { method: 'POST', url: '/v1/sessions/s1/keepalive' },
  { method: 'GET', url: '/v1/sessions/s1' },
  { method: 'DELETE', url: '/v1/sessions/s1' },
  { method: 'POST', url: '/v1/locks/billing/a/acquire' },
  { method: 'POST', url: '/v1/locks/billing/a/renew' },
  { method: 'POST', url: '/v1/locks/billing/a/release' },
  { method: 'GET', url: '/v1/locks/billing/a' },
  { method: 'GET', url: '/v1/locks/billing/a/check?fencing_token=1' },
  { method: 'GET', url: '/v1/locks?prefix=billing/' },
  { method: 'GET', url: '/v1/cluster' },
  { method: 'POST', url: '/v1/cluster/members' },
  { method: 'POST', url: '/v1/cluster/members/n4/promote' },
  { method: 'DELETE', url: '/v1/cluster/members/n4' },
  { method: 'POST', url: '/v1/cluster/transfer-leadership' },
  { method: 'GET', url: '/healthz' },
  { method: 'GET', url: '/readyz' },
  { method: 'GET', url: '/metrics' },
];

const FIELDS = ['ttl_ms', 'owner', 'lock_delay_ms', 'session_id', 'wait_ms', 'fencing_token', 'id', 'api', 'peer', 'to', 'learner', '__proto__', 'constructor'];
const jsonValue = fc.oneof(
  fc.integer(), fc.double(), fc.constantFrom(0, -1, 1e308, Number.MAX_SAFE_INTEGER + 2, 300_001, 999, 1000), fc.string({ maxLength: 40 }),
  fc.constantFrom('s1', 'http://127.0.0.1:1', 'n2', '', 'x'.repeat(300)), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);
/** bodies that look almost right (known fields, wrong values) and pure garbage */
const bodyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 5, arbitrary: fc.dictionary(fc.constantFrom(...FIELDS), jsonValue, { maxKeys: 4 }).map((o) => JSON.stringify(o)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: fc.string({ maxLength: 80 }) },
  { weight: 1, arbitrary: fc.constantFrom('{"__proto__":{"x":1}}', '{"a":' + '['.repeat(200) + ']'.repeat(200) + '}', '{', '', 'null', '[]', '"str"', '{"ttl_ms":1e400}') },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
const contentType = fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', undefined);
/** mostly authorized callers, so most cases reach validation and the service */
const auth = fc.oneof(
  { weight: 6, arbitrary: fc.constant(bearer('ops')) },
  { weight: 2, arbitrary: fc.constant(bearer('billing')) },
  { weight: 1, arbitrary: fc.constant(bearer('reader')) },
  { weight: 1, arbitrary: fc.constantFrom<Record<string, string>>({}, { authorization: 'Bearer nope' }, { authorization: '\u00ff' }) },
);
const pathNoise = fc.constantFrom('', '', '', '?x=1', '?consistency=stale', '?limit=0', '?prefix=%ZZ', '%00', '/../x', '?fencing_token=-1');

describe('fuzz: every REST route with random bodies (auth on)', () => {
  const tmp = tempDir('fuzz');
  let app: FastifyInstance;
  before(async () => {
    ({ app } = await securedApp(tmp.dir, { auth: { tokens_file: writeTokens(tmp.dir) } }));
  });
  after(async () => {
    await app.close();
    tmp.cleanup();
  });

  it(`${ROUTE_CASES} requests: no crash, no hang, no 5xx but 503/504, errors in the contract's shape`, async () => {
    const seed = seedFor('fuzz routes');
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTES), bodyArb, contentType, auth, pathNoise, fc.option(fc.string({ minLength: 1, maxLength: 140 }), { nil: undefined }), async (route, body, ct, hdrs, noise, idemKey) => {
        const headers: Record<string, string> = { ...hdrs };
        if (ct !== undefined && body !== undefined) headers['content-type'] = ct;
        if (idemKey !== undefined) headers['idempotency-key'] = idemKey;
        const res = await withDeadline(app.inject({ method: route.method, url: route.url + noise, headers, ...(body !== undefined ? { payload: body } : {}) }), 5000, `${route.method} ${route.url}`);
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        const what = `${route.method} ${route.url}${noise} ${JSON.stringify(body)?.slice(0, 120)} → ${res.statusCode} ${res.body.slice(0, 200)}`;
        assert.ok(res.statusCode < 500 || res.statusCode === 503 || res.statusCode === 504, what);
        if (res.statusCode >= 400) {
          const b = JSON.parse(res.body) as { error?: { code?: unknown; message?: unknown } };
          assert.ok(typeof b.error?.code === 'string' && /^[a-z_]+$/.test(b.error.code) && typeof b.error.message === 'string', what);
          if (res.statusCode === 429 || res.statusCode === 503) assert.ok(res.headers['retry-after'], `${what}: no Retry-After`);
        }
      }),
      { seed, numRuns: ROUTE_CASES },
    );
    console.log(`# statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`);
    // the server is still healthy after all that
    assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  });
});

function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, rej) => (t = setTimeout(() => rej(new Error(`hang: ${what} took over ${ms} ms`)), ms)))]).finally(() => clearTimeout(t));
}

// ---- peer decoders ----

const packr = new Packr({ useRecords: false, structuredClone: false, moreTypes: false, bundleStrings: false });
const frame = (v: unknown): Uint8Array => {
  const body = packr.pack(v);
  const out = new Uint8Array(body.length + 1);
  out[0] = WIRE_VERSION;
  out.set(body, 1);
  return out;
};
const OPTS = { cluster: 'test', self: 'n1', knownPeers: new Set(['n2', 'n3']), maxEntries: 1000, maxBytes: 1 << 20 };

/** valid encodings, then mutated: byte flips, truncation, splices, random tails */
const validEnvelope = fc.array(messageArb('n2', 'n1'), { minLength: 1, maxLength: 4 }).map((messages) => encodeEnvelope({ cluster: 'test', from: 'n2', to: 'n1', messages }));
const validChunk = fc.uint8Array({ maxLength: 64 }).map((chunk) => encodeSnapshotChunk({
  cluster: 'test', from: 'n2', to: 'n1', transfer: 't1', offset: 0, total: chunk.length, term: 3, meta: { index: 7, term: 2, conf: { voters: ['n1', 'n2'], learners: [] } }, chunk,
}));
function mutated(base: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return fc.tuple(base, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }), fc.constantFrom('flip', 'truncate', 'append', 'zero')).map(([b, edits, how]) => {
    const out = Uint8Array.from(b);
    if (how === 'truncate') return out.subarray(0, (edits[0]![0] % Math.max(1, out.length)));
    if (how === 'append') return Uint8Array.from([...out, ...edits.map((e) => e[1])]);
    for (const [pos, val] of edits) out[pos % out.length] = how === 'zero' ? 0 : val;
    return out;
  });
}
/** msgpack of arbitrary values in roughly the right shape (fields present, values wrong) */
const shaped = fc.record({
  cluster: fc.oneof(fc.constant('test'), fc.string({ maxLength: 8 }), fc.integer()),
  from: fc.oneof(fc.constantFrom('n2', 'n3', 'n1', 'nx', ''), fc.anything()),
  to: fc.oneof(fc.constantFrom('n1', 'n2'), fc.anything()),
  messages: fc.oneof(fc.array(fc.anything({ maxDepth: 2 }), { maxLength: 4 }), fc.array(fc.dictionary(fc.constantFrom('type', 'term', 'index', 'entries', 'commit', 'snapshot', 'prevIndex', 'prevTerm', 'reject', 'ctx'), fc.oneof(fc.integer(), fc.string({ maxLength: 6 }), fc.constantFrom('append', 'vote', 'snapshot', 'heartbeat'), fc.array(fc.anything({ maxDepth: 1 }), { maxLength: 3 }), fc.uint8Array({ maxLength: 8 }))), { maxLength: 3 }), fc.anything()),
}, { requiredKeys: [] }).map(frame);
const peerBody: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 3 }).map(frame) },
  { weight: 3, arbitrary: shaped },
  { weight: 3, arbitrary: mutated(validEnvelope) },
  { weight: 2, arbitrary: mutated(validChunk) },
  { weight: 1, arbitrary: validEnvelope },
);

describe('fuzz: the peer decoders', () => {
  it(`${PEER_CASES} bodies: decodeEnvelope and decodeSnapshotChunk return a value, never throw or hang`, () => {
    const seed = seedFor('fuzz peer decoder');
    const outcomes = new Map<string, number>();
    const started = Date.now();
    fc.assert(
      fc.property(peerBody, (body) => {
        const t0 = Date.now();
        const e = decodeEnvelope(body, OPTS);
        const c = decodeSnapshotChunk(body, { ...OPTS, maxSnapshotBytes: 1 << 20 });
        assert.ok(Date.now() - t0 < 1000, 'one decode took over a second');
        for (const r of [e, c]) {
          assert.equal(typeof r.ok, 'boolean');
          if (!r.ok) {
            assert.ok(['malformed', 'version', 'cluster', 'unknown_peer', 'bad_field', 'too_large'].includes(r.reason), r.reason);
            assert.equal(typeof r.detail, 'string');
          }
        }
        if (e.ok) for (const m of e.messages) assert.ok(m.from === 'n2' || m.from === 'n3');
        const k = e.ok ? 'ok' : e.reason;
        outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
      }),
      { seed, numRuns: PEER_CASES },
    );
    console.log(`# envelope outcomes: ${JSON.stringify(Object.fromEntries(outcomes))} in ${Date.now() - started} ms`);
    assert.ok((outcomes.get('ok') ?? 0) > 0, 'some valid envelopes were generated');
  });
});
