// The canonical form an Idempotency-Key's digest is taken over (src/server/leader/request-digest.ts,
// docs/api.md "Idempotency"): equal requests give equal digests whatever the order of the
// fields or which node computes it; any difference in operation, name or a field's value
// gives another digest; and the form itself is stable across versions (a digest that
// changed in an upgrade would refuse honest retries with 422).
// Replay a failure: DIGEST_SEED=<seed printed below> node --test dist/test/server/leader/request-digest.test.js
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalRequest, keyBinding, requestDigest, type KeyedRequest, type RequestField } from '../../../src/server/leader/request-digest.js';
import { testSeed } from '../../support/seed.js';

const seed = testSeed('DIGEST_SEED', { what: 'request digest properties', replay: 'node --test dist/test/server/leader/request-digest.test.js' });

test('the canonical form: fields sorted, unsent ones left out, one spelling per value (golden)', () => {
  const r: KeyedRequest = { op: 'lock.acquire', name: 'billing/invoice-42', body: { max_hold_ms: 60_000, session_id: undefined, owner: 'w"1', ttl_ms: 10_000, mode: 'exclusive' } };
  assert.equal(canonicalRequest(r), '["raftlock.request.v1","lock.acquire","billing/invoice-42",[["max_hold_ms",60000],["mode","exclusive"],["owner","w\\"1"],["ttl_ms",10000]]]');
  // this exact value is what every node of this and later versions must compute: changing
  // the form refuses retries that span an upgrade (bump FORM and say so in docs/api.md)
  assert.equal(requestDigest(r), '8147c02d56d822e5b8f241d5f5d8b879');
  assert.match(requestDigest(r), /^[0-9a-f]{32}$/);
  assert.equal(requestDigest({ ...r, body: { ...r.body, session_id: undefined } }), requestDigest(r), 'unsent is unsent');
  assert.equal(canonicalRequest({ op: 'x', name: '', body: { n: -0 } }), canonicalRequest({ op: 'x', name: '', body: { n: 0 } }));
  assert.throws(() => canonicalRequest({ op: 'x', name: '', body: { n: 1.5 } }), /safe integer/);
});

test('the binding: the principal as sent, anonymous as ""', () => {
  const r: KeyedRequest = { op: 'lock.release', name: 'a', body: { session_id: 's' } };
  assert.deepEqual(keyBinding({}, r), { principal: '', digest: requestDigest(r) });
  assert.deepEqual(keyBinding({ principal: 'ci' }, r), { principal: 'ci', digest: requestDigest(r) });
});

const value: fc.Arbitrary<RequestField> = fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: -1e9, max: 1e9 }), fc.boolean(), fc.constant(undefined));
const fieldName = fc.stringMatching(/^[a-z_]{1,10}$/);
const request: fc.Arbitrary<KeyedRequest> = fc.record({
  op: fc.constantFrom('lock.acquire', 'lock.release', 'semaphore.acquire', 'session.open'),
  name: fc.string({ maxLength: 16 }),
  body: fc.dictionary(fieldName, value, { maxKeys: 6 }),
});

test('property: field order does not matter; an unsent field is no field', () => {
  fc.assert(fc.property(request, fc.nat(), (r, k) => {
    const entries = Object.entries(r.body);
    const rotated = entries.slice(k % (entries.length || 1)).concat(entries.slice(0, k % (entries.length || 1))).reverse();
    const same: KeyedRequest = { op: r.op, name: r.name, body: Object.fromEntries(rotated) };
    assert.equal(canonicalRequest(same), canonicalRequest(r));
    const sent = Object.fromEntries(entries.filter(([, v]) => v !== undefined));
    assert.equal(requestDigest({ ...r, body: sent }), requestDigest(r));
  }), { seed, numRuns: 300 });
});

test('property: the canonical form is injective (it parses back to the request), so different requests differ', () => {
  fc.assert(fc.property(request, request, (a, b) => {
    const parsed = JSON.parse(canonicalRequest(a)) as [string, string, string, [string, RequestField][]];
    assert.deepEqual(parsed, ['raftlock.request.v1', a.op, a.name, Object.entries(a.body).filter(([, v]) => v !== undefined).sort(([x], [y]) => (x < y ? -1 : 1))]);
    const sent = (r: KeyedRequest): Record<string, RequestField> => Object.fromEntries(Object.entries(r.body).filter(([, v]) => v !== undefined));
    const equal = a.op === b.op && a.name === b.name && JSON.stringify(Object.entries(sent(a)).sort()) === JSON.stringify(Object.entries(sent(b)).sort());
    assert.equal(canonicalRequest(a) === canonicalRequest(b), equal);
    assert.equal(requestDigest(a) === requestDigest(b), equal);
  }), { seed, numRuns: 500 });
});

test('property: changing one field, the name or the operation changes the digest', () => {
  fc.assert(fc.property(request, fieldName, value, (r, k, v) => {
    fc.pre(v !== r.body[k]);
    // own fields only: `"__proto__" in {}` is true through the prototype (seed 1105896800)
    fc.pre(!(v === undefined && !Object.hasOwn(r.body, k)));
    assert.notEqual(requestDigest({ ...r, body: { ...r.body, [k]: v } }), requestDigest(r));
    assert.notEqual(requestDigest({ ...r, name: `${r.name}x` }), requestDigest(r));
    assert.notEqual(requestDigest({ ...r, op: `${r.op}x` }), requestDigest(r));
  }), { seed, numRuns: 300 });
});
