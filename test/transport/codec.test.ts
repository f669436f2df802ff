import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import type { Message } from '../../src/raft/core/types.js';
import { WIRE_VERSION, decodeEnvelope, decodeSnapshotChunk, encodeEnvelope, encodeSnapshotChunk, type DecodeOptions, type SnapshotChunk } from '../../src/transport/codec.js';
import { MESSAGE_TYPES } from '../../src/transport/wire-validate.js';
import { messageArb, seedFor } from './arbitraries.js';

const opts: DecodeOptions = { cluster: 'test', self: 'n1', knownPeers: new Set(['n2', 'n3']), maxEntries: 1000, maxBytes: 1 << 20 };
const env = (messages: Message[]) => ({ cluster: 'test', from: 'n2', to: 'n1', messages });

/** craft arbitrary wire bodies, including ones our encoder would never produce */
const rawPackr = new Packr({ useRecords: false, structuredClone: false, moreTypes: false, variableMapSize: true });
function raw(value: unknown, version = WIRE_VERSION): Uint8Array {
  const p = rawPackr.pack(value);
  const out = new Uint8Array(p.length + 1);
  out[0] = version;
  out.set(p, 1);
  return out;
}

const one: Message[] = [
  { from: 'n2', to: 'n1', term: 3, type: 'vote', lastIndex: 10, lastTerm: 2 },
  { from: 'n2', to: 'n1', term: 3, type: 'preVote', lastIndex: 10, lastTerm: 3 },
  { from: 'n2', to: 'n1', term: 3, type: 'voteResp', reject: false },
  { from: 'n2', to: 'n1', term: 3, type: 'preVoteResp', reject: true },
  {
    from: 'n2', to: 'n1', term: 3, type: 'append', prevIndex: 4, prevTerm: 1, commit: 4,
    entries: [
      { index: 5, term: 2, kind: 'noop', data: new Uint8Array() },
      { index: 6, term: 3, kind: 'normal', data: new Uint8Array([1, 2, 3]) },
      { index: 7, term: 3, kind: 'conf', data: new Uint8Array([9]) },
    ],
  },
  { from: 'n2', to: 'n1', term: 3, type: 'appendResp', index: 7, reject: false, hint: 0, hintTerm: 0 },
  { from: 'n2', to: 'n1', term: 3, type: 'heartbeat', commit: 7, ctx: 42 },
  { from: 'n2', to: 'n1', term: 3, type: 'heartbeat', commit: 7, ctx: 0, match: 9 },
  { from: 'n2', to: 'n1', term: 3, type: 'heartbeatResp', ctx: 42 },
  { from: 'n2', to: 'n1', term: 3, type: 'snapshot', snapshot: { meta: { index: 100, term: 2, conf: { voters: ['n1', 'n2'], learners: ['n3'] } }, data: new Uint8Array([7, 7, 7]) } },
  { from: 'n2', to: 'n1', term: 3, type: 'timeoutNow' },
];

/** a valid wire message map (no from/to), to be broken field by field */
const wireAppend = () => ({
  type: 'append', term: 3, prevIndex: 4, prevTerm: 1, commit: 4,
  entries: [{ index: 5, term: 2, kind: 'normal', data: new Uint8Array([1]) }, { index: 6, term: 3, kind: 'normal', data: new Uint8Array([2]) }],
});
const envelopeWith = (messages: unknown[], over: Record<string, unknown> = {}) => raw({ cluster: 'test', from: 'n2', to: 'n1', messages, ...over });

function rejects(body: Uint8Array, reason: string, o: DecodeOptions = opts): string {
  const r = decodeEnvelope(body, o);
  assert.equal(r.ok, false, `expected rejection (${reason}) but it decoded`);
  if (r.ok) throw new Error('unreachable');
  assert.equal(r.reason, reason, `wrong reason; detail: ${r.detail}`);
  assert.ok(r.detail.length > 0);
  return r.detail;
}

describe('codec: round trip', () => {
  it('covers every message type in the fixed examples', () => {
    assert.deepEqual(new Set(one.map((m) => m.type)), new Set(MESSAGE_TYPES));
    const r = decodeEnvelope(encodeEnvelope(env(one)), opts);
    assert.ok(r.ok, r.ok ? '' : r.detail);
    assert.deepStrictEqual(r.messages, one);
    assert.equal(r.from, 'n2');
  });

  it('decodes bytes as plain Uint8Array copies that do not alias the body', () => {
    const body = encodeEnvelope(env([one[4]!]));
    const r = decodeEnvelope(body, opts);
    assert.ok(r.ok);
    const m = r.messages[0]!;
    assert.equal(m.type, 'append');
    if (m.type !== 'append') return;
    const data = m.entries[1]!.data;
    assert.equal(Object.getPrototypeOf(data), Uint8Array.prototype);
    body.fill(0);
    assert.deepEqual([...data], [1, 2, 3]);
  });

  it('encode → decode is the identity on arbitrary valid messages', () => {
    const seed = seedFor('codec round trip');
    fc.assert(
      fc.property(fc.array(messageArb(), { minLength: 0, maxLength: 12 }), (msgs) => {
        const r = decodeEnvelope(encodeEnvelope(env(msgs)), opts);
        if (!r.ok) throw new Error(`rejected: ${r.reason} ${r.detail}`);
        assert.deepStrictEqual(r.messages, msgs);
      }),
      { seed, numRuns: 400 },
    );
  });

  it('refuses to encode a message whose from/to disagree with the envelope (a bug, not input)', () => {
    assert.throws(() => encodeEnvelope(env([{ ...one[0]!, to: 'n3' }])), /assert/);
  });

  it('round-trips snapshot chunks', () => {
    const c: SnapshotChunk = { cluster: 'test', from: 'n2', to: 'n1', transfer: 'abc_DEF-1', offset: 4, total: 10, term: 5, meta: { index: 9, term: 4, conf: { voters: ['n1'], learners: [] } }, chunk: new Uint8Array([1, 2, 3]) };
    const r = decodeSnapshotChunk(encodeSnapshotChunk(c), { ...opts, maxSnapshotBytes: 100 });
    assert.ok(r.ok, r.ok ? '' : r.detail);
    assert.deepStrictEqual(r.chunk, c);
  });
});

describe('codec: rejects bad input with the right reason', () => {
  it('framing: version, emptiness, garbage, trailing data, non-map', () => {
    const good = encodeEnvelope(env([one[0]!]));
    const v2 = good.slice();
    v2[0] = 2;
    rejects(v2, 'version');
    rejects(new Uint8Array(), 'malformed');
    rejects(new Uint8Array([WIRE_VERSION]), 'malformed');
    rejects(new Uint8Array([WIRE_VERSION, 0xc1]), 'malformed'); // 0xc1: never used in msgpack
    rejects(new Uint8Array([WIRE_VERSION, 0xdf, 0xff, 0xff, 0xff, 0xff]), 'malformed'); // map claiming 4G pairs
    rejects(good.subarray(0, good.length - 3), 'malformed'); // truncated
    const trailing = new Uint8Array(good.length + 1);
    trailing.set(good);
    rejects(trailing, 'malformed');
    rejects(raw([1, 2, 3]), 'malformed');
    rejects(raw('hello'), 'malformed');
    rejects(raw(null), 'malformed');
    // deep nesting must not blow the stack of the node
    const deep = new Uint8Array(200_002).fill(0x91);
    deep[0] = WIRE_VERSION;
    deep[deep.length - 1] = 0;
    rejects(deep, 'malformed');
  });

  it('routing: cluster, sender, addressee', () => {
    assert.match(rejects(envelopeWith([], { cluster: 'other' }), 'cluster'), /other/);
    rejects(envelopeWith([], { cluster: 7 }), 'cluster');
    rejects(envelopeWith([], { from: 'n9' }), 'unknown_peer');
    rejects(envelopeWith([], { from: 'n1' }), 'unknown_peer'); // ourselves
    rejects(envelopeWith([], { to: 'n3' }), 'unknown_peer');
    rejects(envelopeWith([], { from: 42 }), 'bad_field');
    rejects(envelopeWith([], { from: 'x'.repeat(500) }), 'bad_field');
    rejects(envelopeWith([], { extra: 1 }), 'bad_field');
    rejects(raw({ cluster: 'test', from: 'n2', to: 'n1' }), 'bad_field'); // no messages
  });

  it('message types and fields', () => {
    rejects(envelopeWith([{ type: 'bogus', term: 1 }]), 'bad_field');
    rejects(envelopeWith([{ type: 'toString', term: 1 }]), 'bad_field');
    rejects(envelopeWith([{ term: 1 }]), 'bad_field');
    rejects(envelopeWith(['vote']), 'bad_field');
    rejects(envelopeWith([{ type: 'timeoutNow', term: 1, from: 'n3' }]), 'bad_field'); // no smuggled sender
    rejects(envelopeWith([{ type: 'voteResp', term: 1 }]), 'bad_field'); // missing reject
    rejects(envelopeWith([{ type: 'voteResp', term: 1, reject: 0 }]), 'bad_field');
    rejects(envelopeWith([{ type: 'vote', term: 1, lastIndex: 0, lastTerm: '2' }]), 'bad_field');
    rejects(envelopeWith([{ type: 'vote', term: 1, lastIndex: 0, lastTerm: 0, bind: 7 }]), 'bad_field');
    rejects(envelopeWith([{ type: 'heartbeat', term: 1, commit: 1, ctx: 'x' }]), 'bad_field');
    rejects(envelopeWith([{ type: 'timeoutNow', term: 1, __proto__x: 1 }]), 'bad_field');
    rejects(raw({ cluster: 'test', from: 'n2', to: 'n1', messages: [JSON.parse('{"type":"timeoutNow","term":1,"__proto__":{"x":1}}')] }), 'bad_field');
  });

  it('absurd numbers: negative, fractional, huge, non-numbers, extension types', () => {
    for (const term of [-1, 1.5, NaN, Infinity, -Infinity, 2 ** 53, 2 ** 52 + 1, Number.MAX_VALUE, '3', true, null, new Date(0), new Uint8Array(1), [3]]) {
      const d = rejects(envelopeWith([{ type: 'heartbeatResp', term, ctx: 0 }]), 'bad_field');
      assert.match(d, /term/);
    }
    // a uint64 beyond 2^53 on the wire (0xcf + 8 bytes)
    const big = envelopeWith([{ type: 'heartbeatResp', term: 0xdeadbeef, ctx: 0 }]);
    const at = Buffer.from(big).indexOf(Buffer.from([0xce, 0xde, 0xad, 0xbe, 0xef]));
    assert.ok(at > 0);
    const patched = Buffer.concat([big.subarray(0, at), Buffer.from([0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), big.subarray(at + 5)]);
    rejects(patched, 'bad_field');
    // structured-clone extension: refused by msgpackr before it builds anything
    rejects(new Uint8Array([WIRE_VERSION, 0xd6, 0x69, 0, 0, 0, 1, 0x80]), 'malformed');
  });

  it('append: negative numbers, kinds, bytes, extra fields', () => {
    const cases: [string, (m: ReturnType<typeof wireAppend>) => void][] = [
      ['negative prevIndex', (m) => void (m.prevIndex = -1)],
      ['negative entry index', (m) => void (m.entries[0]!.index = -5)],
      ['fractional entry term', (m) => void (m.entries[1]!.term = 2.5)],
      ['bad kind', (m) => void ((m.entries[0] as { kind: string }).kind = 'weird')],
      ['string data', (m) => void ((m.entries[0] as { data: unknown }).data = 'abc')],
      ['array data', (m) => void ((m.entries[0] as { data: unknown }).data = [1, 2])],
      ['extra entry field', (m) => void ((m.entries[0] as Record<string, unknown>)['x'] = 1)],
      ['entries not an array', (m) => void ((m as { entries: unknown }).entries = {})],
    ];
    for (const [name, breakIt] of cases) {
      const m = wireAppend();
      breakIt(m);
      const r = decodeEnvelope(envelopeWith([m]), opts);
      assert.equal(r.ok, false, name);
      if (!r.ok) assert.equal(r.reason, 'bad_field', `${name}: ${r.detail}`);
    }
    assert.ok(decodeEnvelope(envelopeWith([wireAppend()]), opts).ok, 'the unbroken append decodes');
  });

  it('snapshot meta and conf', () => {
    const snap = (meta: unknown) => envelopeWith([{ type: 'snapshot', term: 3, snapshot: { meta, data: new Uint8Array(1) } }]);
    rejects(snap({ index: 5, term: 1, conf: { voters: [7], learners: [] } }), 'bad_field');
    rejects(snap({ index: 5, term: 1, conf: { voters: ['n1'] } }), 'bad_field');
    rejects(snap({ index: 5, term: 1, conf: { voters: ['n1'], learners: [], incarnations: ['a'] } }), 'bad_field');
    rejects(snap({ index: 5, term: 1, conf: { voters: ['n1'], learners: [], incarnations: { n1: 1 } } }), 'bad_field');
    rejects(snap({ index: 5, term: 1, conf: { voters: ['n1'], learners: [], clusterId: 1 } }), 'bad_field');
    rejects(snap({ index: '5', term: 1, conf: { voters: ['n1'], learners: [] } }), 'bad_field');
    rejects(snap({ index: 5, term: 1, conf: { voters: Array.from({ length: 2000 }, (_, i) => `n${i}`), learners: [] } }), 'too_large');
    rejects(snap({ index: 5, term: 1, conf: { voters: Array.from({ length: 600 }, (_, i) => `n${i}`), learners: Array.from({ length: 600 }, (_, i) => `l${i}`) } }), 'too_large');
  });

  it('leaves protocol rules to the core: a well-shaped message that breaks one decodes (test/raft/message-check.test.ts refuses it)', () => {
    const conf = { voters: ['n1', 'n1'], learners: [''], incarnations: { n1: 'not a token' }, clusterId: 'a b' };
    const protocolBreakers: unknown[] = [
      { type: 'vote', term: 1, lastIndex: 0, lastTerm: 2, bind: '' },
      { ...wireAppend(), prevIndex: 0, prevTerm: 9, entries: [{ index: 7, term: 5, kind: 'conf', data: new Uint8Array([1]) }] },
      { type: 'snapshot', term: 3, snapshot: { meta: { index: 5, term: 4, conf }, data: new Uint8Array(1) } },
    ];
    const r = decodeEnvelope(envelopeWith(protocolBreakers, { inc: 'has spaces' }), opts);
    assert.ok(r.ok, r.ok ? '' : r.detail);
    assert.equal(r.messages.length, protocolBreakers.length);
  });

  it('sizes: body, entries, messages', () => {
    const body = encodeEnvelope(env([one[4]!]));
    rejects(body, 'too_large', { ...opts, maxBytes: body.length - 1 });
    assert.ok(decodeEnvelope(body, { ...opts, maxBytes: body.length }).ok);
    rejects(body, 'too_large', { ...opts, maxEntries: 2 });
    // the entry budget is per envelope, not per message
    const two = encodeEnvelope(env([one[4]!, one[4]!]));
    rejects(two, 'too_large', { ...opts, maxEntries: 5 });
    assert.ok(decodeEnvelope(two, { ...opts, maxEntries: 6 }).ok);
    rejects(envelopeWith(Array.from({ length: 11 }, () => ({ type: 'timeoutNow', term: 1 }))), 'too_large', { ...opts, maxMessages: 10 });
  });

  it('snapshot chunks: bounds and ids', () => {
    const base = { cluster: 'test', from: 'n2', to: 'n1', transfer: 't1', offset: 0, total: 10, term: 2, meta: { index: 3, term: 2, conf: { voters: ['n1'], learners: [] } }, chunk: new Uint8Array(4) };
    const o = { ...opts, maxSnapshotBytes: 100 };
    const check = (over: Record<string, unknown>, reason: string) => {
      const r = decodeSnapshotChunk(raw({ ...base, ...over }), o);
      assert.equal(r.ok, false, JSON.stringify(over));
      if (!r.ok) assert.equal(r.reason, reason, r.detail);
    };
    assert.ok(decodeSnapshotChunk(raw(base), o).ok);
    check({ total: 101 }, 'too_large');
    check({ offset: 8 }, 'bad_field'); // runs past total
    check({ offset: -1 }, 'bad_field');
    check({ transfer: 'has space' }, 'bad_field');
    check({ transfer: '' }, 'bad_field');
    check({ chunk: new Uint8Array() }, 'bad_field');
    check({ chunk: 'abcd' }, 'bad_field');
    check({ cluster: 'x' }, 'cluster');
    check({ from: 'n7' }, 'unknown_peer');
    check({ meta: { index: 3, term: '5', conf: { voters: [], learners: [] } } }, 'bad_field');
    check({ extra: true }, 'bad_field');
  });
});
