// What the driver writes, and when (src/raft/driver.ts handleReady; docs/storage.md "What is
// written when"): a commit-only change is never a write of its own (the commit index is
// volatile, §5 Figure 2) but rides the next synced batch; a compaction first makes the
// stored commit reach the snapshot; a leader's appends are on the wire before its own
// save is issued, and a follower's ack right after its save; a ReadIndex round (reads and
// keepalives) completes at a quorum of acks, not when every follower answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RawNode, type RaftConfig } from '../../src/raft/core/raw-node.js';
import { seededRng } from '../../src/raft/core/rng.js';
import type { DurableStorage, PersistBatch } from '../../src/raft/seams.js';
import type { Message, Snapshot } from '../../src/raft/core/types.js';
import { MemoryDurableStorage } from '../../src/raft/storage/memory-durable-storage.js';
import { RaftDriver } from '../../src/raft/driver.js';
import { MemoryNetwork, MemoryTransport } from '../../src/transport/memory-transport.js';

type Call = { op: 'save'; sync: boolean; batch: PersistBatch } | { op: 'compact'; index: number } | { op: 'flush'; queued: Message[] };

class RecordingStorage extends MemoryDurableStorage implements DurableStorage {
  constructor(conf: { voters: string[]; learners: string[] }, private readonly calls: Call[]) {
    super(conf);
  }
  /** while set, a synced save completes only when release() is called (a slow fsync) */
  holdSyncedSaves = false;
  private held: (() => void)[] = [];
  override save(batch: PersistBatch, opts: { sync: boolean }): Promise<void> {
    this.calls.push({ op: 'save', sync: opts.sync, batch });
    if (!this.holdSyncedSaves || !opts.sync) return super.save(batch, opts);
    return new Promise((resolve) => this.held.push(() => resolve(super.save(batch, opts))));
  }
  release(): void {
    for (const r of this.held.splice(0)) r();
  }
  override compact(snapshot: Snapshot): Promise<void> {
    this.calls.push({ op: 'compact', index: snapshot.meta.index });
    return super.compact(snapshot);
  }
}

/** the in-memory twin behind a queue: queues on send(), hands the queue to the twin on
 *  flush() (like HttpTransport without its end-of-turn flush), recording each flush */
class QueueTransport extends MemoryTransport {
  queued: Message[] = [];
  readonly written: Message[] = [];
  constructor(id: string, net: MemoryNetwork, private readonly calls: Call[]) {
    super(id, net);
  }
  override send(msgs: readonly Message[]): void {
    this.queued.push(...msgs);
  }
  override flush(): void {
    this.calls.push({ op: 'flush', queued: this.queued });
    this.written.push(...this.queued);
    super.send(this.queued);
    this.queued = [];
  }
}

const ELECTION_TICKS = 10;

function node(id: string, snapshotEveryEntries = 1_000_000, core: Partial<RaftConfig> = {}) {
  const calls: Call[] = [];
  const conf = { voters: ['n1', 'n2', 'n3'], learners: [] };
  const storage = new RecordingStorage(conf, calls);
  const net = new MemoryNetwork();
  const transport = new QueueTransport(id, net, calls);
  net.attach(transport);
  for (const peer of conf.voters) if (peer !== id) net.transport(peer);
  const raw = new RawNode({ id, electionTicks: ELECTION_TICKS, electionTicksMax: ELECTION_TICKS + 1, heartbeatTicks: 1, rng: seededRng(7), preVote: true, checkQuorum: true, maxInflight: 16, maxMsgBytes: 1 << 20, ...core }, storage);
  const driver = new RaftDriver({
    id, raw, storage, transport,
    app: { apply: () => undefined, snapshot: () => new Uint8Array([7]), restore: () => undefined },
    snapshotConf: conf, applied: 0, snapshotEveryEntries, proposalTimeoutMs: 5000,
    clock: { nowMs: () => 0 }, autoRun: false, hooks: { onFatal: (err) => assert.fail(String(err)) },
  });
  return { driver, storage, transport, calls };
}

/** n1 elected by n2's votes, in term 1 */
async function leaderN1(core: Partial<RaftConfig> = {}, snapshotEveryEntries = 1_000_000) {
  const l = node('n1', snapshotEveryEntries, core);
  for (let i = 0; i < ELECTION_TICKS + 1; i++) l.driver.tick();
  await l.driver.drain();
  l.driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'preVoteResp', reject: false });
  await l.driver.drain();
  l.driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'voteResp', reject: false });
  await l.driver.drain();
  return l;
}

const entry = (index: number) => ({ index, term: 1, kind: 'normal' as const, data: new Uint8Array([index]) });
const append = (prevIndex: number, n: number, commit: number): Message => ({
  from: 'n1', to: 'n2', term: 1, type: 'append', prevIndex, prevTerm: prevIndex === 0 ? 0 : 1, commit,
  entries: Array.from({ length: n }, (_, k) => entry(prevIndex + 1 + k)),
});
const heartbeat = (commit: number): Message => ({ from: 'n1', to: 'n2', term: 1, type: 'heartbeat', commit, ctx: 0 });

test('driver: a commit-only change is not written on its own; the next synced batch carries it', async () => {
  const { driver, storage, calls } = node('n2');
  driver.receive(append(0, 2, 0));
  await driver.drain();
  assert.deepEqual(calls.filter((c) => c.op === 'save').map((c) => (c as { sync: boolean }).sync), [true]);
  calls.length = 0;

  // the leader says entries 1..2 are committed: they apply, nothing is written
  driver.receive(heartbeat(2));
  await driver.drain();
  assert.equal(driver.appliedIndex, 2);
  assert.deepEqual(calls.filter((c) => c.op === 'save'), [], 'no standalone write for a commit advance');
  assert.equal(storage.hardState().commit, 0, 'the stored commit index lags (it is volatile)');

  // the next append is one synced batch that carries the commit index as well
  driver.receive(append(2, 1, 2));
  await driver.drain();
  const saves = calls.filter((c): c is Extract<Call, { op: 'save' }> => c.op === 'save');
  assert.equal(saves.length, 1);
  assert.equal(saves[0]!.sync, true);
  assert.equal(saves[0]!.batch.hardState?.commit, 2, 'the deferred commit index rides the synced batch');
  assert.equal(storage.hardState().commit, 2);
});

test('driver: a graceful stop writes the deferred commit index, so a clean restart has it', async () => {
  const { driver, storage, calls } = node('n2');
  driver.receive(append(0, 2, 0));
  await driver.drain();
  driver.receive(heartbeat(2));
  await driver.drain();
  assert.equal(storage.hardState().commit, 0, 'deferred while running');
  calls.length = 0;
  await driver.stop({ writeCommit: true });
  const saves = calls.filter((c): c is Extract<Call, { op: 'save' }> => c.op === 'save');
  assert.deepEqual(saves.map((c) => [c.sync, c.batch.hardState?.commit, c.batch.entries.length]), [[false, 2, 0]]);
  assert.equal(storage.hardState().commit, 2);
});

test('driver: before a compaction the stored commit index is brought up to the snapshot', async () => {
  const { driver, storage, calls } = node('n2', 3);
  driver.receive(append(0, 3, 0));
  await driver.drain();
  calls.length = 0;
  // commit (and so apply) 1..3 through a heartbeat alone: the snapshot at 3 is due, while
  // the stored commit index is still 0 (storage refuses to compact beyond it)
  driver.receive(heartbeat(3));
  await driver.drain();
  assert.equal(driver.appliedIndex, 3);
  const ops = calls.map((c) => (c.op === 'save' ? `save sync=${c.sync} commit=${c.batch.hardState?.commit}` : c.op === 'compact' ? `compact ${c.index}` : 'flush'));
  assert.deepEqual(ops.filter((o) => o !== 'flush'), ['save sync=false commit=3', 'compact 3']);
  assert.equal(storage.snapshot().meta.index, 3);
  assert.equal(storage.hardState().commit, 3);
});

test('driver: a follower writes its ack as soon as its save resolved; a leader writes its appends before its own save', async () => {
  const f = node('n2');
  f.driver.receive(append(0, 1, 0));
  await f.driver.drain();
  const save = f.calls.findIndex((c) => c.op === 'save');
  const flush = f.calls.findIndex((c) => c.op === 'flush' && c.queued.some((m) => m.type === 'appendResp'));
  assert.ok(save >= 0 && flush > save, 'the ack is flushed after the save');
  assert.deepEqual(f.transport.queued, [], 'nothing left for the end-of-turn flush');

  const l = await leaderN1();
  assert.equal(l.driver.currentRole, 'leader');
  // the noop of the new term: its appends go out with the term durable already
  l.driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'appendResp', index: l.storage.lastIndex(), reject: false, hint: 0, hintTerm: 0 });
  await l.driver.drain();
  l.calls.length = 0;
  const p = l.driver.propose(new Uint8Array([9]));
  await l.driver.drain();
  const firstSave = l.calls.findIndex((c) => c.op === 'save' && c.batch.entries.length > 0);
  const appendsOut = l.calls.findIndex((c) => c.op === 'flush' && c.queued.some((m) => m.type === 'append' && m.entries.length > 0));
  assert.ok(appendsOut >= 0 && firstSave > appendsOut, `appends flushed before the leader's own save (${JSON.stringify(l.calls.map((c) => c.op))})`);
  l.driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'appendResp', index: l.storage.lastIndex(), reject: false, hint: 0, hintTerm: 0 });
  await l.driver.drain();
  assert.equal((await p).ok, true);
});

test('driver: a ReadIndex round completes at a quorum of acks (leader + one of two followers)', async () => {
  const l = await leaderN1();
  l.driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'appendResp', index: l.storage.lastIndex(), reject: false, hint: 0, hintTerm: 0 });
  await l.driver.drain();
  l.transport.flush();
  l.transport.written.length = 0;
  const read = l.driver.readIndex(5000);
  await l.driver.drain();
  l.transport.flush();
  const hbs = l.transport.written.filter((m): m is Extract<Message, { type: 'heartbeat' }> => m.type === 'heartbeat' && m.ctx > 0);
  assert.deepEqual(hbs.map((m) => m.to).sort(), ['n2', 'n3']);
  let done = false;
  void read.then(() => (done = true));
  // n3 never answers
  l.driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'heartbeatResp', ctx: hbs[0]!.ctx });
  await l.driver.drain();
  await new Promise((r) => setImmediate(r));
  assert.equal(done, true, 'one follower ack plus the leader is a quorum of three');
  assert.deepEqual(await read, { ok: true, index: l.storage.lastIndex() });
});

const ack = (from: string, index: number): Message => ({ from, to: 'n1', term: 1, type: 'appendResp', index, reject: false, hint: 0, hintTerm: 0 });

test("driver: while the leader's own write is out, the followers' acks are stepped at once; an entry commits and is answered when a majority WITHOUT the leader has it (thesis §10.2.1), never on one follower's copy", async () => {
  const l = await leaderN1();
  l.driver.receive(ack('n2', l.storage.lastIndex()));
  l.driver.receive(ack('n3', l.storage.lastIndex()));
  await l.driver.drain();
  const last = l.storage.lastIndex();
  l.storage.holdSyncedSaves = true;
  let answered = false;
  const p = l.driver.propose(new Uint8Array([9])).then((o) => ((answered = true), o));
  const loop = l.driver.drain(); // the write of the proposal's entry is now out
  await new Promise((r) => setImmediate(r));
  assert.equal(l.storage.lastIndex(), last, 'the entry is not durable on the leader yet');
  l.driver.receive(ack('n2', last + 1));
  await new Promise((r) => setImmediate(r));
  assert.equal(answered, false, 'one follower and the leader\'s unwritten copy are not a quorum of durable copies');
  assert.equal(l.driver.appliedIndex, last);
  l.driver.receive(ack('n3', last + 1));
  await new Promise((r) => setImmediate(r));
  assert.equal(answered, true, 'both followers wrote it: committed, applied and answered before the leader\'s own write completed');
  assert.equal(l.driver.appliedIndex, last + 1);
  assert.equal(l.storage.lastIndex(), last, 'the leader\'s write is still out');
  assert.equal((await p).ok, true);
  l.storage.holdSyncedSaves = false;
  l.storage.release();
  await loop;
  await l.driver.drain();
  assert.equal(l.storage.lastIndex(), last + 1);
  assert.equal(l.driver.appliedIndex, last + 1, 'nothing applied twice (applyEntry asserts the order)');
  // the next proposal takes the usual path: own write, then one ack
  const q = l.driver.propose(new Uint8Array([10]));
  await l.driver.drain();
  l.driver.receive(ack('n2', last + 2));
  await l.driver.drain();
  assert.equal((await q).ok, true);
});

test("driver: entries applied during the leader's own write are above every commit index a Ready carried; a compaction right after still writes the stored commit index up to its snapshot first", async () => {
  const l = await leaderN1({}, 3);
  l.driver.receive(ack('n2', l.storage.lastIndex()));
  l.driver.receive(ack('n3', l.storage.lastIndex()));
  await l.driver.drain();
  const last = l.storage.lastIndex();
  l.storage.holdSyncedSaves = true;
  const ps = [1, 2, 3].map((k) => l.driver.propose(new Uint8Array([k])));
  const loop = l.driver.drain();
  await new Promise((r) => setImmediate(r));
  l.driver.receive(ack('n2', last + 3));
  l.driver.receive(ack('n3', last + 3));
  for (const p of ps) assert.equal((await p).ok, true);
  assert.equal(l.driver.appliedIndex, last + 3);
  l.storage.holdSyncedSaves = false;
  l.storage.release();
  await loop; // the snapshot is due (every 3 entries): it must not be refused
  await l.driver.drain();
  assert.equal(l.storage.snapshot().meta.index, last + 3, 'compacted at the applied index');
  assert.ok(l.storage.initialState().hardState.commit >= last + 3, 'the stored commit index reached the snapshot');
});

test('driver, mutation count-unsynced-self: a leader that counts its own log before it is durable answers on ONE follower\'s copy while its write is out (the bug the rule prevents)', async () => {
  const l = await leaderN1({ testOnlyCountUnsyncedSelf: true });
  l.driver.receive(ack('n2', l.storage.lastIndex()));
  await l.driver.drain();
  const last = l.storage.lastIndex();
  l.storage.holdSyncedSaves = true;
  let answered = false;
  void l.driver.propose(new Uint8Array([9])).then(() => (answered = true));
  const loop = l.driver.drain();
  await new Promise((r) => setImmediate(r));
  l.driver.receive(ack('n2', last + 1));
  await new Promise((r) => setImmediate(r));
  assert.equal(answered, true, 'answered with one durable copy of three: a power loss of the leader now can lose it');
  l.storage.holdSyncedSaves = false;
  l.storage.release();
  await loop;
});
