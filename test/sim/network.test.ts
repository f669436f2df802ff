// SimNetwork and the simulators' disk (MemoryDurableStorage): the fault models do what the
// checkers assume.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seededRng } from '../../src/raft/core/rng.js';
import type { Entry, Message } from '../../src/raft/core/types.js';
import { SimNetwork, type NetEvent } from './network.js';
import { MemoryDurableStorage } from '../../src/raft/storage/memory-durable-storage.js';
import { drawOptions, type NetworkOptions } from './options.js';

const quiet: NetworkOptions = {
  delayMinTicks: 1, delayMeanTicks: 3, dropProbability: 0, duplicateProbability: 0, reorderProbability: 0, linkCapacity: 64,
  partitionMode: 'none', partitionProbability: 0, unpartitionProbability: 0, partitionStabilityTicks: 0, unpartitionStabilityTicks: 0,
  clogProbability: 0, clogDurationMeanTicks: 10,
};
const up = { incarnation: () => 1 };
const hb = (from: string, to: string, ctx = 0): Message => ({ type: 'heartbeat', from, to, term: 1, commit: 0, ctx });

function net(opts: Partial<NetworkOptions> = {}, seed = 1, n = 5): SimNetwork {
  const s = new SimNetwork({ ...quiet, ...opts }, seededRng(seed));
  for (let k = 1; k <= n; k++) s.addNode(`n${k}`);
  return s;
}

/** run until quiet; returns "tick from>to ctx" lines */
function drain(s: SimNetwork, from: number, until: number): string[] {
  const out: string[] = [];
  for (let t = from; t <= until; t++) {
    s.deliverDue(t, up, (ev: NetEvent) => out.push(ev.kind === 'message' ? `${t} ${ev.msg.from}>${ev.msg.to} ${ev.msg.type === 'heartbeat' ? ev.msg.ctx : ''}` : `${t} ${ev.kind} ${ev.node}:${ev.peer}`));
  }
  return out;
}

test('same seed, same deliveries; another seed, other delays', () => {
  const run = (seed: number): string[] => {
    const s = net({ dropProbability: 0.2, duplicateProbability: 0.1, reorderProbability: 0.3 }, seed);
    for (let k = 0; k < 200; k++) s.send(hb(`n${1 + (k % 5)}`, `n${1 + ((k + 1) % 5)}`, k), 0, 1);
    return drain(s, 1, 200);
  };
  assert.deepEqual(run(7), run(7));
  assert.notDeepEqual(run(7), run(8));
});

test('every packet is delivered no earlier than delayMinTicks, in (from, to) link order per tick', () => {
  const s = net({ delayMinTicks: 2 });
  for (let k = 0; k < 50; k++) {
    s.send(hb('n3', 'n1', k), 10, 1);
    s.send(hb('n1', 'n2', k), 10, 1);
  }
  const got = drain(s, 11, 300);
  assert.equal(got.length, 100);
  for (const line of got) assert.ok(Number(line.split(' ')[0]) >= 12, line);
  for (let k = 1; k < got.length; k++) {
    const [ta, la] = got[k - 1]!.split(' '), [tb, lb] = got[k]!.split(' ');
    if (ta === tb) assert.ok(la! <= lb!, `${got[k - 1]} before ${got[k]}`);
  }
});

test('cut, isolate and recover', () => {
  const s = net();
  s.cut('n1', 'n2');
  s.send(hb('n1', 'n2'), 0, 1);
  s.send(hb('n2', 'n1'), 0, 1);
  assert.deepEqual(drain(s, 1, 100).filter((l) => !l.includes('unreachable')).map((l) => l.split(' ')[1]), ['n2>n1']);
  s.isolate('n3');
  for (const p of ['n1', 'n2', 'n4', 'n5']) assert.ok(s.isCut('n3', p) && s.isCut(p, 'n3'));
  s.recover(100);
  assert.ok(!s.isCut('n3', 'n1') && !s.isCut('n1', 'n2'));
});

test('drop loses that share of one link only', () => {
  const s = net();
  s.drop('n1', 'n2', 1);
  for (let k = 0; k < 20; k++) {
    s.send(hb('n1', 'n2', k), 0, 1);
    s.send(hb('n2', 'n1', k), 0, 1);
  }
  const got = drain(s, 1, 100);
  assert.equal(got.filter((l) => l.includes('n1>n2')).length, 0);
  assert.equal(got.filter((l) => l.includes('n2>n1')).length, 20);
});

test("Howard's partial partition: n1-n3 fully connected, n4 only to n2, n5 only to n3", () => {
  const s = net();
  s.howardPartition(0);
  const links = new Set<string>();
  for (let a = 1; a <= 5; a++) for (let b = 1; b <= 5; b++) if (a !== b && !s.isCut(`n${a}`, `n${b}`)) links.add(`${a}${b}`);
  assert.deepEqual([...links].sort(), ['12', '13', '21', '23', '24', '31', '32', '35', '42', '53']);
});

test('a lost snapshot is reported to its sender; a delivered one too; a dead peer is unreachable', () => {
  const s = net({ dropProbability: 1 });
  const snap: Message = { type: 'snapshot', from: 'n1', to: 'n2', term: 1, snapshot: { meta: { index: 5, term: 1, conf: { voters: [], learners: [] } }, data: new Uint8Array() } };
  s.send(snap, 0, 1);
  const evs: NetEvent[] = [];
  s.deliverDue(1, up, (ev) => evs.push(ev));
  assert.deepEqual(evs, [{ kind: 'snapshotStatus', node: 'n1', inc: 1, peer: 'n2', ok: false }]);
  const t = net();
  t.send(snap, 0, 1);
  t.send(hb('n1', 'n3'), 0, 1);
  const got: NetEvent[] = [];
  for (let k = 1; k < 100; k++) t.deliverDue(k, { incarnation: (id) => (id === 'n3' ? null : 1) }, (ev) => got.push(ev));
  assert.deepEqual(got.map((e) => e.kind).sort(), ['message', 'snapshotStatus', 'unreachable']);
  assert.ok(got.some((e) => e.kind === 'snapshotStatus' && e.ok));
});

test('a full link drops, a clogged link holds its packets until it clears', () => {
  const s = net({ linkCapacity: 4 });
  for (let k = 0; k < 10; k++) s.send(hb('n1', 'n2', k), 0, 1);
  assert.equal(s.inFlight(), 4);
  assert.equal(s.stats.dropped, 6);
  const c = net();
  c.clog('n1', 'n2', 50);
  c.send(hb('n1', 'n2'), 0, 1);
  const got = drain(c, 1, 60);
  assert.deepEqual(got.map((l) => l.split(' ')[0]), ['50']);
});

test('options are a pure function of the seed, and stay inside their ranges', () => {
  assert.deepEqual(drawOptions(123), drawOptions(123));
  for (let seed = 0; seed < 300; seed++) {
    const o = drawOptions(seed);
    assert.ok(o.nodeCount === 3 || o.nodeCount === 5);
    assert.ok(o.heartbeatTicks < o.electionTicks);
    assert.ok(o.network.delayMinTicks >= 1 && o.network.delayMeanTicks >= o.network.delayMinTicks);
    assert.ok(o.network.delayMeanTicks <= o.network.delayMinTicks + o.electionTicks / 5);
    if (o.network.partitionMode === 'howard') assert.ok(o.nodeCount === 5 && o.preVote && o.checkQuorum && o.workload.confChangeProbability === 0);
  }
});

const ent = (index: number, term: number): Entry => ({ index, term, kind: 'normal', data: new Uint8Array([index]) });

test('MemoryDurableStorage: unsynced writes are readable, lost on power loss, kept on process death', () => {
  const conf = { voters: ['n1'], learners: [] };
  const lossy = new MemoryDurableStorage(conf, { rng: seededRng(1) });
  lossy.saveSync({ hardState: { term: 1, vote: 'n1', commit: 0 }, entries: [ent(1, 1)] }, { sync: true });
  for (let k = 2; k <= 20; k++) lossy.saveSync({ entries: [ent(k, 1)] }, { sync: false });
  assert.equal(lossy.lastIndex(), 20);
  assert.equal(lossy.durable.lastIndex(), 1);
  lossy.crash(true);
  // a prefix of the unsynced batches survives, never a later one without an earlier
  assert.ok(lossy.lastIndex() >= 1 && lossy.lastIndex() <= 20);
  assert.deepEqual(lossy.entries(1, lossy.lastIndex() + 1).map((e) => e.index), Array.from({ length: lossy.lastIndex() }, (_, k) => k + 1));
  assert.deepEqual(lossy.hardState(), { term: 1, vote: 'n1', commit: 0 });

  const kept = new MemoryDurableStorage(conf, { rng: seededRng(1) });
  kept.saveSync({ hardState: { term: 2, vote: null, commit: 0 }, entries: [ent(1, 2)] }, { sync: false });
  kept.crash(false);
  assert.equal(kept.lastIndex(), 1);
  assert.equal(kept.durable.hardState().term, 2);
});

test('MemoryDurableStorage: one sync makes every earlier write durable; compaction is durable at once', () => {
  const d = new MemoryDurableStorage({ voters: ['n1'], learners: [] }, { rng: seededRng(2) });
  d.saveSync({ hardState: { term: 1, vote: null, commit: 0 }, entries: [ent(1, 1), ent(2, 1)] }, { sync: false });
  d.saveSync({ entries: [ent(3, 1)] }, { sync: true });
  assert.equal(d.durable.lastIndex(), 3);
  assert.equal(d.durable.hardState().term, 1);
  d.compactSync({ meta: { index: 2, term: 1, conf: { voters: ['n1'], learners: [] } }, data: new Uint8Array([1]) });
  d.crash(true);
  assert.equal(d.firstIndex(), 3);
  assert.equal(d.snapshot().meta.index, 2);
  assert.equal(d.lastIndex(), 3);
});
