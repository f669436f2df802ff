// The driver's inbox keeps ticks and messages in arrival order (src/raft/driver.ts feedInbox):
// while a Ready waits for a slow write, a follower keeps receiving the leader's heartbeats
// and counting ticks; after the write, only the ticks since the last heartbeat may count
// towards its election timeout. Stepping all messages first and all ticks after made a
// write longer than the election timeout end in a needless campaign (docs/recovery.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RawNode } from '../../src/raft/core/raw-node.js';
import { seededRng } from '../../src/raft/core/rng.js';
import type { DurableStorage, PersistBatch } from '../../src/raft/seams.js';
import type { Message, Snapshot } from '../../src/raft/core/types.js';
import { MemoryDurableStorage } from '../../src/raft/storage/memory-durable-storage.js';
import { RaftDriver } from '../../src/raft/driver.js';
import { MemoryNetwork, MemoryTransport } from '../../src/transport/memory-transport.js';

/** memory storage whose synced writes can be held until release() */
class HeldStorage extends MemoryDurableStorage implements DurableStorage {
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;
  saves = 0;
  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open?.();
    this.gate = null;
  }
  override async save(batch: PersistBatch, opts: { sync: boolean }): Promise<void> {
    this.saves++;
    if (opts.sync && this.gate) await this.gate;
    return super.save(batch, opts);
  }
  override compact(snapshot: Snapshot): Promise<void> {
    return super.compact(snapshot);
  }
}

/** the in-memory twin, recording what the driver sent (at send time, as the driver sent
 *  it) for the assertions below; the peers are attached, so nothing is reported unreachable */
class SinkTransport extends MemoryTransport {
  readonly sent: Message[] = [];
  override send(msgs: readonly Message[]): void {
    this.sent.push(...msgs);
    super.send(msgs);
  }
}

function sinkFor(id: string): SinkTransport {
  const net = new MemoryNetwork();
  const t = new SinkTransport(id, net);
  net.attach(t);
  for (const peer of ['n1', 'n2', 'n3']) if (peer !== id) net.transport(peer);
  return t;
}

const ELECTION_TICKS = 10;

function node(id: string, heartbeatCoverTicks = 0): { driver: RaftDriver; storage: HeldStorage; transport: SinkTransport } {
  const conf = { voters: ['n1', 'n2', 'n3'], learners: [] };
  const storage = new HeldStorage(conf);
  const transport = sinkFor(id);
  const raw = new RawNode({ id, electionTicks: ELECTION_TICKS, electionTicksMax: ELECTION_TICKS + 1, heartbeatTicks: 1, rng: seededRng(7), preVote: true, checkQuorum: true, maxInflight: 16, maxMsgBytes: 1 << 20 }, storage);
  const driver = new RaftDriver({
    id, raw, storage, transport, heartbeatCoverTicks,
    app: { apply: () => undefined, snapshot: () => new Uint8Array(), restore: () => undefined },
    snapshotConf: conf, applied: 0, snapshotEveryEntries: 1_000_000, proposalTimeoutMs: 5000,
    clock: { nowMs: () => 0 }, autoRun: false, hooks: { onFatal: (err) => assert.fail(String(err)) },
  });
  return { driver, storage, transport };
}

const heartbeat = (commit: number): Message => ({ from: 'n1', to: 'n2', term: 1, type: 'heartbeat', commit, ctx: 0 });

test('driver: ticks that piled up during a slow write count only after the last message that came after them', async () => {
  const { driver, storage, transport } = node('n2');
  // n2 follows n1 in term 1 and has one entry
  driver.receive({ from: 'n1', to: 'n2', term: 1, type: 'append', prevIndex: 0, prevTerm: 0, commit: 0, entries: [{ index: 1, term: 1, kind: 'noop', data: new Uint8Array() }] });
  await driver.drain();
  assert.equal(driver.currentRole, 'follower');
  assert.equal(driver.currentLeader, 'n1');

  // the next append needs a synced write, which hangs for two election timeouts of ticks;
  // the leader's heartbeats keep arriving all along, the last one after the last tick but one
  storage.hold();
  driver.receive({ from: 'n1', to: 'n2', term: 1, type: 'append', prevIndex: 1, prevTerm: 1, commit: 1, entries: [{ index: 2, term: 1, kind: 'normal', data: new Uint8Array([1]) }] });
  const running = driver.drain();
  await new Promise((r) => setImmediate(r));
  for (let i = 0; i < 2 * ELECTION_TICKS; i++) {
    driver.tick();
    driver.receive(heartbeat(1));
  }
  driver.tick();
  storage.release();
  await running;
  await driver.drain();

  const campaign = transport.sent.filter((m) => m.type === 'preVote' || m.type === 'vote');
  assert.deepEqual(campaign, [], 'no campaign: the leader was heard one tick ago');
  assert.equal(driver.currentRole, 'follower');
  assert.equal(driver.currentLeader, 'n1');

  // and silence still counts: a full election timeout of ticks with no heartbeat → pre-vote
  for (let i = 0; i < ELECTION_TICKS + 1; i++) driver.tick();
  await driver.drain();
  assert.ok(transport.sent.some((m) => m.type === 'preVote'), 'a follower that hears nothing still campaigns');
});

test('driver: a leader waiting for a slow write repeats heartbeats each tick, for a bounded number of ticks', async () => {
  const COVER = 5;
  const { driver, storage, transport } = node('n1', COVER);
  // n1 campaigns and wins term 1 (pre-vote, then vote, each granted by n2)
  for (let i = 0; i < ELECTION_TICKS + 1; i++) driver.tick();
  await driver.drain();
  assert.ok(transport.sent.some((m) => m.type === 'preVote'));
  driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'preVoteResp', reject: false });
  await driver.drain();
  driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'voteResp', reject: false });
  await driver.drain();
  assert.equal(driver.currentRole, 'leader');
  const term = driver.currentTerm;

  // a proposal needs a synced write, which hangs; the followers must keep hearing n1
  storage.hold();
  const p = driver.propose(new Uint8Array([1]));
  const running = driver.drain();
  await new Promise((r) => setImmediate(r));
  transport.sent.length = 0;
  for (let i = 0; i < 3 * COVER; i++) driver.tick();
  const hbs = transport.sent.filter((m) => m.type === 'heartbeat');
  assert.equal(hbs.length, 2 * COVER, 'one heartbeat per follower and tick, for COVER ticks only');
  for (const m of hbs) assert.deepEqual({ term: m.term, commit: (m as { commit: number }).commit, ctx: (m as { ctx: number }).ctx }, { term, commit: 0, ctx: 0 });
  assert.deepEqual(new Set(hbs.map((m) => m.to)), new Set(['n2', 'n3']));
  storage.release();
  await running;
  driver.receive({ from: 'n2', to: 'n1', term, type: 'appendResp', index: storage.lastIndex(), reject: false, hint: 0, hintTerm: 0 });
  await driver.drain();
  assert.equal((await p).ok, true);

  // off by default (the simulator runs without it)
  const off = node('n1');
  for (let i = 0; i < ELECTION_TICKS + 1; i++) off.driver.tick();
  await off.driver.drain();
  off.driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'preVoteResp', reject: false });
  await off.driver.drain();
  off.driver.receive({ from: 'n2', to: 'n1', term: 1, type: 'voteResp', reject: false });
  await off.driver.drain();
  off.storage.hold();
  void off.driver.propose(new Uint8Array([1]));
  const offRunning = off.driver.drain();
  await new Promise((r) => setImmediate(r));
  off.transport.sent.length = 0;
  for (let i = 0; i < 3; i++) off.driver.tick();
  assert.equal(off.transport.sent.length, 0);
  off.storage.release();
  await offRunning;
});
