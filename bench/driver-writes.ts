// Storage writes per committed entry in an in-process 3-node cluster (the real RawNode and
// RaftDriver, lazy commit as in production, memory storage and transport), one proposal at
// a time with the clock stopped (no heartbeats): a count, so it does not depend on how
// loaded the machine is (BENCHMARKS.md "Second round").
//
//   node --import tsx bench/driver-writes.ts [--entries 500]
import { RawNode } from '../src/raft/core/raw-node.js';
import { seededRng } from '../src/raft/core/rng.js';
import type { PersistBatch } from '../src/raft/core/storage.js';
import { MemoryDurableStorage } from '../src/raft/storage/memory-durable-storage.js';
import { RaftDriver } from '../src/raft/driver.js';
import { MemoryNetwork } from '../src/transport/memory-transport.js';

const ei = process.argv.indexOf('--entries');
const N = ei >= 0 ? Number(process.argv[ei + 1]) : 500;
if (!Number.isInteger(N) || N < 1) {
  console.error('--entries: expected a positive integer');
  process.exit(2);
}
const ids = ['n1', 'n2', 'n3'];
const conf = { voters: ids, learners: [] };
const net = new MemoryNetwork();
const counts = new Map(ids.map((id) => [id, { synced: 0, unsynced: 0 }]));

class CountingStorage extends MemoryDurableStorage {
  constructor(private readonly id: string) {
    super(conf);
  }
  override save(b: PersistBatch, o: { sync: boolean }): Promise<void> {
    const c = counts.get(this.id)!;
    if (o.sync) c.synced++;
    else c.unsynced++;
    return super.save(b, o);
  }
}

const drivers = ids.map((id, k) => {
  const storage = new CountingStorage(id);
  const raw = new RawNode({ id, electionTicks: 10 + 5 * k, electionTicksMax: 11 + 5 * k, heartbeatTicks: 1, rng: seededRng(k + 1), preVote: true, checkQuorum: true, maxInflight: 256, maxMsgBytes: 1 << 20, lazyCommit: true }, storage);
  return new RaftDriver({
    id, raw, storage, transport: net.transport(id),
    app: { apply: () => undefined, snapshot: () => new Uint8Array(), restore: () => undefined },
    snapshotConf: conf, applied: 0, snapshotEveryEntries: 1e9, proposalTimeoutMs: 5000,
    clock: { nowMs: () => performance.now() }, autoRun: true,
    hooks: { onFatal: (e) => { console.error(e); process.exit(1); } },
  });
});

const ticker = setInterval(() => drivers.forEach((d) => d.tick()), 10);
let leader: RaftDriver | undefined;
while (!(leader = drivers.find((d) => d.currentRole === 'leader'))) await new Promise((r) => setTimeout(r, 20));
await new Promise((r) => setTimeout(r, 200)); // the leader's noop commits everywhere
clearInterval(ticker);
for (const c of counts.values()) Object.assign(c, { synced: 0, unsynced: 0 });
for (let i = 0; i < N; i++) {
  const r = await leader.propose(new Uint8Array([i & 255]));
  if (!r.ok) throw new Error(`proposal ${i}: ${JSON.stringify(r)}`);
}
await new Promise((r) => setTimeout(r, 100));
console.log(`storage writes per committed entry (${N} entries, one at a time, no heartbeats):`);
for (const [k, id] of ids.entries()) {
  const c = counts.get(id)!;
  console.log(`  ${id}${drivers[k] === leader ? ' (leader)' : ''}: ${(c.synced / N).toFixed(2)} synced + ${(c.unsynced / N).toFixed(2)} unsynced`);
}
process.exit(0);
