// The swarm: every knob of one simulated schedule, derived from a single seed (TigerBeetle
// vopr.zig's "swarm testing": instead of one fixed fault mix, each seed draws its own mix,
// so some seeds hammer one subsystem while others barely touch it). Options are drawn from
// their own forked Rng, so adding a knob at the END of drawOptions keeps every existing
// knob stable for old seeds. Both modes draw from it: the lock mode takes the Raft mode's
// network, disk and timing knobs as they are (docs/simulation.md "One simulator, two modes").
import { seededRng, type Rng } from '../../src/raft/core/rng.js';
import type { Mutation } from './raft/mutations.js';
import type { ConfChurnOptions } from './raft/conf-churn.js';

export type PartitionMode =
  | 'none'
  /** a random split into two sides, cut both ways */
  | 'symmetric'
  /** a random split, cut one way only (A hears B, B does not hear A) */
  | 'asymmetric'
  /** the current leader loses every link, both ways */
  | 'isolateLeader'
  /** Howard's partial partition (5 nodes): n1,n2,n3 fully connected, n4↔n2 only, n5↔n3 only */
  | 'howard';

export interface NetworkOptions {
  /** one-way delay = delayMinTicks + Exp(delayMeanTicks - delayMinTicks), in ticks, >= 1 */
  delayMinTicks: number;
  delayMeanTicks: number;
  dropProbability: number;
  duplicateProbability: number;
  /** probability that a packet gets an extra uniform delay of up to 4 × mean (reordering) */
  reorderProbability: number;
  /** packets queued per link at most; more are dropped (a bounded queue, like the transport) */
  linkCapacity: number;
  partitionMode: PartitionMode;
  /** per tick, when unpartitioned / partitioned, after the stability period */
  partitionProbability: number;
  unpartitionProbability: number;
  partitionStabilityTicks: number;
  unpartitionStabilityTicks: number;
  /** per link per tick: the link stops delivering (holds packets) for Exp(mean) ticks */
  clogProbability: number;
  clogDurationMeanTicks: number;
}

export interface CrashOptions {
  /** per tick: one random running node crashes */
  crashProbability: number;
  /** a crashed node stays down for 1 + Exp(mean) ticks */
  downTicksMean: number;
  /** on crash, writes that were not synced are lost (power loss, not just process death);
   *  a random prefix of the unsynced batches survives, as with a sequential WAL */
  loseUnsynced: boolean;
  /** probability that a crash hits the middle of a Ready (after early messages, or after
   *  persisting but before sending) instead of between ticks */
  midReadyProbability: number;
  /** probability that the victim is the current leader rather than any node: leaders that
   *  die young leave old-term entries half-replicated (the Figure 8 situation, §5.4.2) */
  leaderBias: number;
  /** probability that a newly elected leader is crashed within a few round trips */
  youngLeaderProbability: number;
  /** per tick: a voter's disk is lost entirely and the node restarts on an empty one under
   *  the same id (a failed data disk, an operator wiping the wrong directory) */
  amnesiaProbability: number;
  /** an operator notices a lost disk and runs `member remove` after 1 + Exp(mean) ticks */
  amnesiaNoticeTicksMean: number;
  /** per tick: a follower's disk loses the newest entries it had acknowledged (a lying or
   *  damaged disk) and the node restarts at once; only entries that a majority of the
   *  other voters hold durably, so no protocol is asked to survive a lost majority */
  lostTailProbability: number;
}

/** slow disks (disk-stalls.ts): a synced write that takes whole ticks, during which the
 *  driver steps nothing and the heartbeat cover keeps a leader heard */
export interface DiskOptions {
  /** per tick: one node's next synced write stalls (0 on half the seeds) */
  stallProbability: number;
  /** a stall lasts 1 + Exp(mean) ticks (mean 0.5–2.5 election timeouts: some outlast the cover) */
  stallTicksMean: number;
  /** probability that the stalled node is the leader rather than any node */
  stallLeaderBias: number;
}

export interface WorkloadOptions {
  proposeProbability: number;
  readProbability: number;
  transferProbability: number;
  /** per tick: propose one membership change (add learner / promote / remove) */
  confChangeProbability: number;
  /** per node per tick: take an app snapshot at the applied index and compact the log */
  compactProbability: number;
  payloadBytesMax: number;
}

export interface SimOptions {
  seed: number;
  /** ticks of the fault phase */
  ticks: number;
  /** K: after healing, a leader must exist and a fresh write and read must complete within K ticks */
  livenessTicks: number;
  nodeCount: 3 | 5;
  electionTicks: number;
  heartbeatTicks: number;
  preVote: boolean;
  checkQuorum: boolean;
  maxInflight: number;
  maxMsgBytes: number;
  /** RaftConfig.lazyCommit (production runs with it on) */
  lazyCommit: boolean;
  /** the driver's heartbeat cover (RaftDriverOptions.heartbeatCoverTicks), as production
   *  sets it: one maximum election timeout (2 × electionTicks, the core's default bound) */
  heartbeatCoverTicks: number;
  disk: DiskOptions;
  network: NetworkOptions;
  crash: CrashOptions;
  workload: WorkloadOptions;
  /** membership churn around failovers (conf-churn.ts) */
  churn: ConfChurnOptions;
  /** Howard's partial partition held for this many ticks at the end; at most one leader change allowed */
  stableWindowTicks: number;
  /** safety fixes switched off for this run (never drawn: set by the caller, mutations.ts) */
  mutations: Mutation[];
}

/** a probability that is 0 for a share of seeds and otherwise uniform in [lo, hi) */
function maybe(rng: Rng, zeroShare: number, lo: number, hi: number): number {
  return rng.next() < zeroShare ? 0 : lo + rng.next() * (hi - lo);
}

function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[rng.int(0, xs.length)]!;
}

/** one independent stream per subsystem, forked in a fixed order from the seed, so a
 *  change in how often one subsystem draws never shifts another's stream */
export interface SubsystemRngs {
  options: Rng;
  network: Rng;
  disk: Rng;
  core: Rng;
  workload: Rng;
  nemesis: Rng;
  churn: Rng;
}

export function subsystemRngs(seed: number): SubsystemRngs {
  const root = seededRng(seed);
  return { options: root.fork(), network: root.fork(), disk: root.fork(), core: root.fork(), workload: root.fork(), nemesis: root.fork(), churn: root.fork() };
}

/** the fault ticks a Raft schedule runs unless told (`--ticks`, SIM_TICKS) */
export const DEFAULT_TICKS = 2000;

export function drawOptions(seed: number, ticks = DEFAULT_TICKS, mutations: readonly Mutation[] = []): SimOptions {
  const rng = subsystemRngs(seed).options;
  const nodeCount = rng.next() < 0.5 ? 3 : 5;
  const electionTicks = rng.int(10, 21);
  const heartbeatTicks = rng.int(1, 4);
  const delayMinTicks = rng.int(1, 3);
  // the mean stays well under the election timeout, or no leader could ever hold on and
  // the liveness phase would test the options rather than the protocol
  const delayMeanTicks = delayMinTicks + rng.next() * (electionTicks / 5);
  const modes: PartitionMode[] = nodeCount === 5
    ? ['none', 'symmetric', 'asymmetric', 'isolateLeader', 'howard']
    : ['none', 'symmetric', 'asymmetric', 'isolateLeader'];
  const partitionMode = pick(rng, modes);
  const howard = partitionMode === 'howard';
  const network: NetworkOptions = {
    delayMinTicks,
    delayMeanTicks,
    dropProbability: maybe(rng, 0.2, 0, 0.25),
    duplicateProbability: maybe(rng, 0.3, 0, 0.08),
    reorderProbability: maybe(rng, 0.3, 0, 0.2),
    linkCapacity: pick(rng, [16, 64, 256]),
    partitionMode,
    partitionProbability: maybe(rng, 0.1, 0.001, 0.03),
    unpartitionProbability: 0.01 + rng.next() * 0.1,
    partitionStabilityTicks: rng.int(electionTicks, 6 * electionTicks),
    unpartitionStabilityTicks: rng.int(electionTicks, 6 * electionTicks),
    clogProbability: maybe(rng, 0.4, 0, 0.003),
    clogDurationMeanTicks: rng.int(5, 60),
  };
  const crash: CrashOptions = {
    crashProbability: maybe(rng, 0.25, 0, 0.006),
    downTicksMean: rng.int(5, 120),
    loseUnsynced: rng.next() < 0.6,
    midReadyProbability: rng.next() * 0.5,
    // drawn last, below, so the older knobs keep their values per seed
    leaderBias: 0,
    youngLeaderProbability: 0,
    amnesiaProbability: 0,
    amnesiaNoticeTicksMean: 0,
    lostTailProbability: 0,
  };
  const workload: WorkloadOptions = {
    proposeProbability: 0.02 + rng.next() * 0.6,
    readProbability: maybe(rng, 0.2, 0, 0.3),
    transferProbability: maybe(rng, 0.4, 0, 0.01),
    // Howard's check fixes the membership to n1..n5
    confChangeProbability: howard ? 0 : maybe(rng, 0.4, 0, 0.01),
    compactProbability: maybe(rng, 0.3, 0, 0.02),
    payloadBytesMax: pick(rng, [4, 16, 64, 300]),
  };
  const o: SimOptions = {
    seed, ticks, nodeCount, electionTicks, heartbeatTicks,
    livenessTicks: 40 * electionTicks,
    // Howard's scenario is about PreVote + CheckQuorum (thesis §9.6; Howard & Mortier,
    // "Raft does not guarantee liveness in the face of network faults", 2020)
    preVote: howard || rng.next() < 0.6,
    checkQuorum: howard || rng.next() < 0.6,
    maxInflight: pick(rng, [1, 2, 8, 64, 256]),
    maxMsgBytes: pick(rng, [64, 512, 4096, 1 << 20]),
    lazyCommit: false, // drawn last, below, so that adding it shifted no other knob of a seed
    heartbeatCoverTicks: 2 * electionTicks,
    disk: { stallProbability: 0, stallTicksMean: 1, stallLeaderBias: 0 }, // drawn last, below
    network, crash, workload,
    churn: { stepProbability: 0, crashDelayMaxTicks: 1, crashNewLeaderProbability: 0, downTicksMean: 1, followUpTicks: 1, clogTicks: 1 }, // drawn below
    stableWindowTicks: 30 * electionTicks,
    mutations: [...mutations],
  };
  o.crash.leaderBias = maybe(rng, 0.3, 0.2, 0.9);
  o.crash.youngLeaderProbability = maybe(rng, 0.5, 0.2, 0.8);
  o.lazyCommit = rng.next() < 0.7;
  // Howard's check fixes the membership to n1..n5
  const churnOn = rng.next() < 0.35 && !howard;
  o.churn = {
    stepProbability: churnOn ? 0.005 + rng.next() * 0.05 : 0,
    crashDelayMaxTicks: rng.int(1, 3 + Math.ceil(delayMeanTicks)),
    crashNewLeaderProbability: maybe(rng, 0.3, 0.2, 0.9),
    downTicksMean: rng.int(1, 3 * electionTicks),
    followUpTicks: rng.int(2 * electionTicks, 8 * electionTicks),
    clogTicks: rng.int(3 * electionTicks, 10 * electionTicks),
  };
  // drawn after the churn knobs (so adding them shifted no knob of a seed above);
  // Howard's check fixes the membership to n1..n5, and the operator's answer to a lost
  // disk is a membership change
  o.crash.amnesiaProbability = howard ? 0 : maybe(rng, 0.5, 0.0005, 0.004);
  o.crash.amnesiaNoticeTicksMean = rng.int(20, 400);
  // drawn after everything above (so adding them shifted no knob of a seed); half the
  // seeds stall no write, and their schedules are as before
  o.disk = { stallProbability: maybe(rng, 0.5, 0.001, 0.01), stallTicksMean: Math.round(electionTicks * (0.5 + 2 * rng.next())), stallLeaderBias: 0.3 + rng.next() * 0.6 };
  // drawn after the disk stalls (so adding it shifted no knob of a seed above): a disk that loses entries
  // the node had acknowledged (docs/raft-core.md "A follower whose log went backwards")
  o.crash.lostTailProbability = maybe(rng, 0.7, 0.0005, 0.004);
  return o;
}

/** the disk-stall nemesis' draws: a stream of their own, past every stream the Raft and
 *  the lock mode fork from the seed (so a seed without stalls draws exactly as before) */
export function stallRng(seed: number): Rng {
  const root = seededRng(seed);
  for (let k = 0; k < 11; k++) root.fork();
  return root.fork();
}

/** every option, one per line, `SEED=` first (VOPR style) */
export function describeOptions(o: SimOptions): string {
  const lines = [`SEED=${o.seed}`];
  const flat = (prefix: string, obj: object): void => {
    for (const [k, v] of Object.entries(obj)) {
      if (k === 'seed') continue;
      if (Array.isArray(v)) lines.push(`  ${prefix}${k}=${v.join(',')}`);
      else if (v !== null && typeof v === 'object') flat(`${prefix}${k}.`, v as object);
      else lines.push(`  ${prefix}${k}=${typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(4) : String(v)}`);
    }
  };
  flat('', o);
  return lines.join('\n');
}
