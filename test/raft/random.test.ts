// Randomized safety check of the core under message loss, reordering, duplication,
// partitions, crashes/restarts, compaction, membership churn and reads. Every run prints
// its seed; replay one with RAFT_SEED=<seed> node --import tsx --test test/raft/random.test.ts
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, enc } from './harness.js';
import { seededRng, type Rng } from '../../src/raft/core/rng.js';
import type { Message, NodeId, TraceEvent } from '../../src/raft/core/types.js';
import { freshSeed, seedFromEnv } from '../support/seed.js';

interface Checks {
  leaderOfTerm: Map<number, NodeId>;
}

function runSeed(seed: number, steps: number): void {
  const rng: Rng = seededRng(seed);
  const n = rng.next() < 0.5 ? 3 : 5;
  const checks: Checks = { leaderOfTerm: new Map() };
  const trace = (e: TraceEvent): void => {
    if (e.type !== 'becomeLeader') return;
    const prev = checks.leaderOfTerm.get(e.term);
    assert.ok(prev === undefined || prev === e.id, `seed ${seed}: two leaders in term ${e.term}: ${prev} and ${e.id}`);
    checks.leaderOfTerm.set(e.term, e.id);
  };
  const opts = { seed, preVote: rng.next() < 0.7, checkQuorum: rng.next() < 0.7, maxInflight: rng.int(1, 8), maxMsgBytes: rng.int(30, 300), electionTicks: 10, heartbeatTicks: rng.int(1, 4), trace };
  const net = Network.create(n, opts);
  const ids = net.ids();
  const dropRate = rng.next() * 0.3;
  const dupRate = rng.next() * 0.1;
  let proposals = 0;
  /** reads: ctx → the highest index any node knew committed when the read was issued */
  const readFloor = new Map<number, number>();
  let nextCtx = 1;
  const maxCommit = (): number => Math.max(...ids.map((id) => net.node(id).raw.status().commit));

  const deliverSome = (): void => {
    const q = net.queue;
    net.queue = [];
    // reorder: shuffle a little
    for (let k = q.length - 1; k > 0; k--) {
      if (rng.next() < 0.3) {
        const j = rng.int(0, k + 1);
        [q[k], q[j]] = [q[j]!, q[k]!];
      }
    }
    const out: Message[] = [];
    for (const m of q) {
      if (rng.next() < dropRate) {
        if (m.type === 'snapshot') net.node(m.from).raw.reportSnapshot(m.to, false); // as a transport would
        continue;
      }
      out.push(m);
      if (rng.next() < dupRate) out.push(m);
    }
    net.queue = out;
    net.deliver();
  };

  for (let step = 0; step < steps; step++) {
    const r = rng.next();
    const leaders = net.leaders();
    if (r < 0.35) {
      net.tickAll();
    } else if (r < 0.55) {
      const leader = leaders[rng.int(0, Math.max(leaders.length, 1))];
      if (leader) {
        const res = net.node(leader).raw.propose(enc(`p${proposals++}`));
        if (!res.ok) proposals--;
      }
    } else if (r < 0.6) {
      const leader = leaders[0];
      if (leader) {
        const ctx = nextCtx++;
        if (net.node(leader).raw.readIndex(ctx)) readFloor.set(ctx, maxCommit());
      }
    } else if (r < 0.63) {
      net.recover();
      const k = rng.int(0, 3);
      for (let j = 0; j < k; j++) net.cutLink(ids[rng.int(0, n)]!, ids[rng.int(0, n)]!);
    } else if (r < 0.64) {
      const id = ids[rng.int(0, n)]!;
      net.restart(id, net.node(id).storage.snapshot().meta.index);
    } else if (r < 0.65) {
      // compact a node at its applied index
      const nd = net.node(net.ids()[rng.int(0, n)]!);
      const st = nd.raw.status();
      if (st.applied > nd.storage.snapshot().meta.index && st.applied <= nd.storage.lastIndex()) {
        nd.storage.compact({ meta: { index: st.applied, term: nd.storage.term(st.applied)!, conf: st.conf }, data: enc(`s${st.applied}`) });
      }
    } else if (r < 0.66) {
      // membership churn among existing nodes: demote to learner / promote back
      const leader = leaders[0];
      if (leader) {
        const target = ids[rng.int(0, n)]!;
        const conf = net.node(leader).raw.status().conf;
        const cc = conf.learners.includes(target) ? { type: 'addVoter' as const, nodeId: target } : { type: 'addLearner' as const, nodeId: target };
        if (cc.type === 'addVoter' || conf.voters.length > 3) net.node(leader).raw.proposeConfChange(cc);
      }
    } else if (r < 0.67) {
      const leader = leaders[0];
      if (leader) net.node(leader).raw.transferLeadership(ids[rng.int(0, n)]!);
    }
    for (const id of ids) while (net.handleReady(id));
    deliverSome();
    for (const id of ids) {
      for (const rs of net.node(id).readStates.splice(0)) {
        const floor = readFloor.get(rs.ctx);
        assert.ok(floor !== undefined, `seed ${seed}: read state for unknown ctx ${rs.ctx}`);
        assert.ok(rs.index >= floor, `seed ${seed}: read ${rs.ctx} answered at ${rs.index} < ${floor} known committed when issued (stale read)`);
        readFloor.delete(rs.ctx);
      }
    }
  }
  // liveness: heal everything and require one leader and identical applied logs
  net.recover();
  for (let t = 0; t < 300 && !(net.leaders().length === 1 && ids.every((id) => net.node(id).raw.status().applied === net.node(net.leaders()[0]!).raw.status().commit)); t++) net.run(1);
  const leader = net.leader();
  net.propose(leader, 'final');
  net.run(5);
  const want = net.node(leader).raw.status().commit;
  if (process.env["RAFT_STATS"]) console.log(`seed ${seed}: n=${n} ${JSON.stringify({ preVote: opts.preVote, checkQuorum: opts.checkQuorum, dropRate: dropRate.toFixed(2) })} terms=${checks.leaderOfTerm.size} commit=${want} snaps=${net.sent.filter((m) => m.type === "snapshot").length} conf=${JSON.stringify(net.node(leader).raw.status().conf)}`);
  for (const id of ids) {
    const st = net.node(id).raw.status();
    const isMember = st.conf.voters.includes(id) || st.conf.learners.includes(id);
    if (isMember && st.applied !== want) console.log(JSON.stringify(st), JSON.stringify(net.node(leader).raw.status()), net.node(id).storage.firstIndex(), net.node(leader).storage.firstIndex());
    if (isMember) assert.equal(st.applied, want, `seed ${seed}: ${id} applied ${st.applied}, leader committed ${want}`);
  }
}

test('randomized: safety under loss, reordering, duplication, partitions, restarts, compaction, churn', () => {
  // RAFT_SEED=N replays seed N alone; otherwise 40 seeds from a fresh base
  const fixed = seedFromEnv('RAFT_SEED');
  const base = fixed ?? freshSeed();
  const seeds = fixed !== undefined ? [fixed] : Array.from({ length: 40 }, (_, k) => base + k);
  console.log(`# randomized Raft safety: seeds ${base}..${base + seeds.length - 1} (replay one: RAFT_SEED=N node --test dist/test/raft/random.test.js)`);
  for (const seed of seeds) {
    try {
      runSeed(seed, 1500);
    } catch (err) {
      console.log(`reproduce: RAFT_SEED=${seed} node --import tsx --test test/raft/random.test.ts`);
      throw err;
    }
  }
  console.log(`random: ${seeds.length} seeds passed (first ${seeds[0]})`);
});
