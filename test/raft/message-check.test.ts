// The core's trust boundary for peer messages (src/raft/core/message-check.ts, called by
// RawNode.step): a misaddressed or malformed message is refused with a reason, counted and
// reported, changes nothing, and never reaches a handler's assertions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, enc } from './harness.js';
import { RawNode, type Rejection } from '../../src/raft/core/raw-node.js';
import { MemoryStorage } from '../../src/raft/core/storage.js';
import { seededRng } from '../../src/raft/core/rng.js';
import { checkMessage } from '../../src/raft/core/message-check.js';
import { encodeConfChange, utf8Length, validNodeId } from '../../src/raft/core/conf.js';
import type { Message } from '../../src/raft/core/types.js';
import { testSeed } from '../support/seed.js';

const ok = { type: 'append', from: 'n1', to: 'n2', term: 1, prevIndex: 1, prevTerm: 1, entries: [], commit: 1 };
const entry = (index: number, term: number, kind = 'normal', data: unknown = new Uint8Array()) => ({ index, term, kind, data });
const conf = { voters: ['n1', 'n2', 'n3'], learners: [] as string[] };
const snap = (meta: unknown, data: unknown = new Uint8Array()) => ({ type: 'snapshot', from: 'n1', to: 'n2', term: 1, snapshot: { meta, data } });

/** [message, reason, detail pattern] */
const refused: [unknown, Rejection['reason'], RegExp][] = [
  [{ ...ok, to: 'n9' }, 'misaddressed', /addressed to n9/],
  [{ ...ok, from: 'n2' }, 'misaddressed', /from this node/],
  [null, 'bad_header', /not an object/],
  [{ ...ok, from: '' }, 'bad_header', /from/],
  [{ ...ok, from: 7 }, 'bad_header', /from/],
  // a node id is 1-256 bytes of UTF-8 (conf.ts validNodeId; the wire has no limit of its own)
  [{ ...ok, from: 'x'.repeat(257) }, 'bad_header', /from/],
  [{ ...ok, from: 'é'.repeat(129) }, 'bad_header', /from/],
  [{ ...ok, term: -1 }, 'bad_header', /term/],
  [{ ...ok, term: 1.5 }, 'bad_header', /term/],
  [{ ...ok, term: '1' }, 'bad_header', /term/],
  [{ ...ok, type: 'install' }, 'bad_header', /type/],
  [{ ...ok, inc: 'no spaces allowed' }, 'bad_header', /inc/],
  [{ ...ok, inc: 5 }, 'bad_header', /inc/],
  [{ ...ok, inc: 'a'.repeat(129) }, 'bad_header', /inc/],
  [{ ...ok, inc: '' }, 'bad_header', /inc/],
  [{ ...ok, prevIndex: 'x' }, 'bad_field', /append: prevIndex/],
  [{ ...ok, prevTerm: -2 }, 'bad_field', /append: prevTerm/],
  [{ ...ok, commit: null }, 'bad_field', /append: commit/],
  [{ ...ok, prevTerm: 2, entries: [] }, 'bad_field', /append: prevTerm 2 above the message term 1/],
  [{ ...ok, prevIndex: 0, prevTerm: 1, commit: 0 }, 'bad_field', /append: prevTerm 1 at index 0: only index 0 has term 0/],
  [{ ...ok, entries: {} }, 'bad_field', /append: entries: not an array/],
  [{ ...ok, entries: [entry(7, 1)] }, 'bad_field', /entries\[0\]: index 7, expected 2/],
  [{ ...ok, entries: [entry(2, 1), entry(4, 1)] }, 'bad_field', /entries\[1\]: index 4, expected 3/],
  [{ ...ok, entries: [entry(2, 5)] }, 'bad_field', /entries\[0\]: term 5 outside \[1, 1\]/],
  [{ ...ok, term: 3, entries: [entry(2, 3), entry(3, 2)] }, 'bad_field', /entries\[1\]: term 2 outside \[3, 3\]/],
  [{ ...ok, entries: [entry(2, 1, 'normal', 'bytes')] }, 'bad_field', /data: not bytes/],
  [{ ...ok, entries: [entry(2, 1, 'weird')] }, 'bad_field', /kind: unknown/],
  [{ ...ok, entries: [entry(2, 1, 'conf', new Uint8Array([1, 2]))] }, 'bad_field', /conf entry does not decode/],
  [{ ...ok, entries: [null] }, 'bad_field', /entries\[0\]: not an entry/],
  [{ type: 'vote', from: 'n3', to: 'n2', term: 1, lastIndex: -4, lastTerm: 0 }, 'bad_field', /vote: lastIndex/],
  [{ type: 'vote', from: 'n3', to: 'n2', term: 1, lastIndex: 3, lastTerm: 2 }, 'bad_field', /vote: lastTerm 2 above the message term 1/],
  [{ type: 'preVote', from: 'n3', to: 'n2', term: 1, lastIndex: 3, lastTerm: 2 }, 'bad_field', /preVote: lastTerm 2 above the message term 1/],
  [{ type: 'vote', from: 'n3', to: 'n2', term: 1, lastIndex: 0, lastTerm: 0, bind: 'a b' }, 'bad_field', /vote: bind/],
  [{ type: 'preVote', from: 'n3', to: 'n2', term: 1, lastIndex: 0, lastTerm: 0, transfer: 'yes' }, 'bad_field', /preVote: transfer/],
  [{ type: 'vote', from: 'n3', to: 'n2', term: 1, lastIndex: 0, lastTerm: 0, bind: '' }, 'bad_field', /vote: bind/],
  [{ type: 'voteResp', from: 'n3', to: 'n2', term: 1, reject: 0 }, 'bad_field', /voteResp: reject/],
  [{ type: 'appendResp', from: 'n3', to: 'n2', term: 1, index: 1, reject: false, hint: -1, hintTerm: 0 }, 'bad_field', /appendResp: hint/],
  [{ type: 'appendResp', from: 'n3', to: 'n2', term: 1, index: 2 ** 53, reject: false, hint: 0, hintTerm: 0 }, 'bad_field', /appendResp: index/],
  [{ type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 1 }, 'bad_field', /heartbeat: ctx/],
  [{ type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 4, ctx: 0, match: 3 }, 'bad_field', /heartbeat: match/],
  [{ type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 4, ctx: 0, match: 'x' }, 'bad_field', /heartbeat: match/],
  [{ type: 'heartbeatResp', from: 'n3', to: 'n2', term: 1, ctx: 'a' }, 'bad_field', /heartbeatResp: ctx/],
  [snap({ index: 'x' }), 'bad_field', /snapshot.meta.index/],
  [snap({ index: 0, term: 0, conf }), 'bad_field', /snapshot.meta.index/],
  [snap({ index: 5, term: 1, conf }, [1, 2]), 'bad_field', /snapshot.data/],
  [snap({ index: 5, term: 0, conf }), 'bad_field', /snapshot.meta.term: 0 at index 5: only index 0 has term 0/],
  [snap({ index: 5, term: 2, conf }), 'bad_field', /snapshot.meta.term: 2 above the message term 1/],
  [snap({ index: 5, term: 1, conf: { voters: ['n1'], learners: ['n1'] } }), 'bad_field', /n1 listed twice/],
  [snap({ index: 5, term: 1, conf: { voters: ['x'.repeat(257)], learners: [] } }), 'bad_field', /not a node id/],
  [snap({ index: 5, term: 1, conf: { voters: ['n1'] } }), 'bad_field', /not a configuration/],
  [snap({ index: 5, term: 1, conf: { voters: ['n1', 'n1'], learners: [] } }), 'bad_field', /n1 listed twice/],
  [snap({ index: 5, term: 1, conf: { voters: ['n1'], learners: [''] } }), 'bad_field', /not a node id/],
  [snap({ index: 5, term: 1, conf: { ...conf, incarnations: { n1: '' } } }), 'bad_field', /incarnations/],
  [snap({ index: 5, term: 1, conf: { ...conf, incarnations: { ['x'.repeat(257)]: 'a' } } }), 'bad_field', /incarnations/],
  [snap({ index: 5, term: 1, conf: { ...conf, clusterId: 'a b' } }), 'bad_field', /clusterId/],
  [snap(null), 'bad_field', /not a snapshot/],
];

test('step refuses misaddressed and malformed messages with a reason, counts them, and changes nothing', () => {
  const net = Network.create(3);
  net.campaign('n1');
  net.stabilize();
  const n2 = net.node('n2').raw;
  const before = JSON.stringify(n2.status());
  const counts = new Map<string, number>();
  for (const [m, reason, detail] of refused) {
    const r = n2.step(m as Message);
    assert.ok(r !== null, `accepted: ${JSON.stringify(m)}`);
    assert.equal(r.reason, reason, `${JSON.stringify(m)}: ${r.detail}`);
    assert.match(r.detail, detail);
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  assert.deepEqual(n2.rejections(), counts);
  assert.equal(JSON.stringify(n2.status()), before);
  assert.equal(n2.hasReady(), false, 'a refused message produces no Ready (no reply, no state change)');
  net.propose('n1', 'still fine');
  net.stabilize();
  assert.deepEqual(net.appliedData('n2').slice(-1), ['still fine']);
});

test('well-formed messages pass the boundary, including a conf entry and a full snapshot', () => {
  const cc = encodeConfChange({ type: 'addLearner', nodeId: 'n4' });
  const good: unknown[] = [
    ok,
    { ...ok, inc: 'n1#1', entries: [entry(2, 1), entry(3, 1, 'conf', cc), entry(4, 1, 'noop')] },
    { ...ok, prevIndex: 0, prevTerm: 0, commit: 0 },
    { type: 'vote', from: 'n3', to: 'n2', term: 4, lastIndex: 9, lastTerm: 3, transfer: true, bind: 'n2#1' },
    { type: 'preVoteResp', from: 'n3', to: 'n2', term: 4, reject: true },
    { type: 'appendResp', from: 'n3', to: 'n2', term: 1, index: 9, reject: true, hint: 3, hintTerm: 1 },
    { type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 10 ** 9, ctx: 0 },
    { type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 4, ctx: 0, match: 9 },
    // a doubted match at or below the leader's commit: the heartbeat's commit is that match
    { type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 4, ctx: 0, match: 4 },
    { type: 'heartbeatResp', from: 'n3', to: 'n2', term: 1, ctx: 5 },
    snap({ index: 5, term: 1, conf: { ...conf, incarnations: { n1: 'a', n2: 'b', n3: 'c' }, clusterId: 'a.1' } }),
    { type: 'timeoutNow', from: 'n1', to: 'n2', term: 1 },
  ];
  for (const m of good) assert.equal(checkMessage(m as Message, 'n2'), null, JSON.stringify(m));
});

test('RaftConfig.onReject hears every refused message with its reason', () => {
  const seen: [Message, Rejection][] = [];
  const raw = new RawNode(
    { id: 'n2', electionTicks: 10, heartbeatTicks: 1, rng: seededRng(1), preVote: false, checkQuorum: false, maxInflight: 8, maxMsgBytes: 1 << 20, onReject: (m, why) => seen.push([m, why]) },
    new MemoryStorage(conf),
  );
  const bad = { ...ok, commit: -1 } as unknown as Message;
  assert.deepEqual(raw.step(bad), { reason: 'bad_field', detail: 'append: commit: not a natural number' });
  assert.equal(raw.step(ok as Message), null);
  assert.deepEqual(seen, [[bad, { reason: 'bad_field', detail: 'append: commit: not a natural number' }]]);
});

// no valid bytes among them: a peer that alters an entry's data (a Byzantine one) is not
// what Raft protects against, and not what the boundary can tell
const GARBAGE: unknown[] = [undefined, null, -1, 1.5, NaN, 2 ** 60, '', 'x', true, {}, [], [1, 2]];

test('fuzz: a peer message with any one field garbled never throws, and a refused one changes nothing', () => {
  const seed = testSeed('RAFT_MESSAGE_FUZZ_SEED', { what: 'peer message fuzz', fallback: 1, replay: 'node --test dist/test/raft/message-check.test.js' });
  const rng = seededRng(seed);
  const net = Network.create(3, { incarnations: true, preVote: true, checkQuorum: true });
  net.campaign('n1');
  for (let k = 0; k < 5; k++) net.propose(net.leader(), `v${k}`);
  net.stabilize();
  const samples = net.sent.filter((m) => m.to !== undefined);
  assert.ok(samples.length > 10);
  let refusedCount = 0;
  for (let round = 0; round < 600; round++) {
    const m = structuredClone(samples[rng.int(0, samples.length)]!) as unknown as Record<string, unknown>;
    // garble one field, top level or one level down (an entry, the snapshot meta)
    let target = m;
    const nested = Object.values(m).filter((v) => typeof v === 'object' && v !== null && !(v instanceof Uint8Array)) as Record<string, unknown>[];
    if (nested.length > 0 && rng.int(0, 3) === 0) {
      const n = nested[rng.int(0, nested.length)]!;
      target = Array.isArray(n) ? (n.length > 0 ? (n[rng.int(0, n.length)] as Record<string, unknown>) : m) : n;
    }
    const keys = Object.keys(target);
    target[keys[rng.int(0, keys.length)]!] = GARBAGE[rng.int(0, GARBAGE.length)];
    const to = net.nodes.get(String(m['to']));
    if (!to) continue;
    const before = JSON.stringify(to.raw.status());
    const r = to.raw.step(m as unknown as Message);
    if (r !== null) {
      refusedCount++;
      assert.equal(JSON.stringify(to.raw.status()), before, `refused (${r.detail}) yet changed state: ${JSON.stringify(m)}`);
    }
    // keep the cluster moving so later samples meet other states (answers to a garbled
    // sender id that names no node go nowhere)
    if (round % 50 === 49) stabilize(net);
  }
  assert.ok(refusedCount > 100, `only ${refusedCount} of 600 refused`);
  // the cluster still works: a leader emerges (poll, bounded) and commits on every node
  stabilize(net);
  for (let k = 0; k < 500 && net.leaders().length !== 1; k++) {
    net.tickAll();
    stabilize(net);
  }
  const res = net.node(net.leader()).raw.propose(enc('after the fuzz'));
  assert.ok(res.ok, JSON.stringify(res));
  stabilize(net);
  for (const id of net.ids()) assert.equal(net.appliedData(id).at(-1), 'after the fuzz');
});

function stabilize(net: Network): void {
  for (let k = 0; k < 10_000; k++) {
    net.queue = net.queue.filter((m) => net.nodes.has(m.to));
    let busy = false;
    for (const id of net.ids()) busy = net.handleReady(id) || busy;
    net.queue = net.queue.filter((m) => net.nodes.has(m.to));
    if (net.deliver() > 0) busy = true;
    if (!busy) return;
  }
}

test('utf8Length counts as TextEncoder does (surrogate pairs 4, lone surrogates 3), and a node id is at most 256 bytes', () => {
  const seed = testSeed('UTF8_SEED', { what: 'utf8Length strings' });
  const rng = seededRng(seed);
  const units = [0x41, 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xffff];
  const te = new TextEncoder();
  for (let k = 0; k < 2000; k++) {
    let s = '';
    const len = rng.int(0, 12);
    for (let i = 0; i < len; i++) s += String.fromCharCode(rng.int(0, 3) === 0 ? (units[rng.int(0, units.length)] as number) : rng.int(0, 0x10000));
    assert.equal(utf8Length(s), te.encode(s).length, `SEED=${seed} ${JSON.stringify(s)}`);
    const bytes = te.encode(s).length;
    assert.equal(validNodeId(s), bytes > 0 && bytes <= 256, `SEED=${seed} ${JSON.stringify(s)}`);
  }
  assert.ok(validNodeId('a'.repeat(256)) && !validNodeId('a'.repeat(257)));
  assert.ok(validNodeId('é'.repeat(128)) && !validNodeId(`${'é'.repeat(128)}a`));
  assert.ok(validNodeId('😀'.repeat(64)) && !validNodeId('😀'.repeat(64) + 'a'));
  assert.ok(!validNodeId('') && !validNodeId(7));
  assert.ok(utf8Length('x'.repeat(1e6), 256) <= 258, 'stops counting just past the limit');
});
