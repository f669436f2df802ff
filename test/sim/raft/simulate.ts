// One schedule, in the VOPR's phases:
//   1. faults: `ticks` ticks of network faults, crashes and client traffic, checking safety
//      after every tick;
//   2. liveness: heal everything (restart every node, lift partitions, clogs, loss and
//      duplication) and require within K ticks a leader that every member follows, a fresh
//      write committed, applied on every member, and a linearizable read served;
//   3. stability (Howard's partial partition only, with PreVote + CheckQuorum): hold the
//      partition for a window and allow at most one leader change in it.
import { DEFAULT_TICKS, drawOptions, stallRng, subsystemRngs, type SimOptions } from '../options.js';
import { SimCluster } from './cluster.js';
import { Workload } from './workload.js';
import { ConfChurn } from './conf-churn.js';
import { DiskStalls } from './disk-stalls.js';
import { SafetyViolation } from '../../checkers/raft/safety.js';
import type { Mutation } from './mutations.js';

export type Phase = 'faults' | 'liveness' | 'stability';

export interface ScheduleFailure {
  /** the checker, 'Liveness', 'Stability', or 'Exception' (an assertion in the core or the simulator) */
  kind: string;
  message: string;
  phase: Phase;
  tick: number;
  stack?: string;
}

export interface ScheduleResult {
  seed: number;
  options: SimOptions;
  ok: boolean;
  ticks: number;
  failure?: ScheduleFailure;
  stats: Record<string, number>;
  /** the last trace lines (only when tracing was on) */
  trace: string[];
}

export interface RunConfig {
  ticks?: number;
  /** keep the last N trace lines (role changes, partitions, crashes) for the failure report */
  traceLines?: number;
  /** print trace lines as they happen */
  onTrace?: (line: string) => void;
  /** safety fixes to switch off (mutations.ts) */
  mutations?: readonly Mutation[];
  /** false: no disk stalls, whatever the seed draws (disk-stalls.ts): the schedule such a
   *  seed had before stalls existed (the mutation table's soak seeds were found then) */
  diskStalls?: boolean;
}

class PhaseFailure extends Error {
  constructor(readonly kind: 'Liveness' | 'Stability', message: string) {
    super(message);
  }
}

export function runSchedule(seed: number, cfg: RunConfig = {}): ScheduleResult {
  const opts = drawOptions(seed, cfg.ticks ?? DEFAULT_TICKS, cfg.mutations);
  if (cfg.diskStalls === false) opts.disk.stallProbability = 0;
  const rngs = subsystemRngs(seed);
  const trace: string[] = [];
  const keep = cfg.traceLines ?? 0;
  const traceFn = keep > 0 || cfg.onTrace
    ? (line: string): void => {
      cfg.onTrace?.(line);
      if (keep > 0) {
        trace.push(line);
        if (trace.length > keep) trace.shift();
      }
    }
    : undefined;
  const cluster = new SimCluster(opts, { core: rngs.core, disk: rngs.disk, net: rngs.network }, traceFn);
  const workload = new Workload(opts, cluster, rngs.workload, rngs.nemesis);
  const churn = new ConfChurn(opts, cluster, rngs.churn, traceFn);
  const stalls = new DiskStalls(opts, cluster, stallRng(seed));
  let phase: Phase = 'faults';
  const result = (failure?: ScheduleFailure): ScheduleResult => ({
    seed, options: opts, ok: failure === undefined, ticks: cluster.now, trace,
    ...(failure ? { failure } : {}),
    stats: {
      ...cluster.stats, ...workload.stats, ...churn.stats, ...stalls.stats, ...cluster.network.stats, ...cluster.checkers.counts,
      committed: cluster.checkers.maxApplied,
    },
  });
  try {
    let lastPartition = 'none';
    for (let t = 0; t < opts.ticks; t++) {
      cluster.beginTick();
      cluster.network.tickFaults(cluster.now, () => cluster.leader()?.id ?? null);
      if (traceFn && cluster.network.partitionLabel !== lastPartition) {
        lastPartition = cluster.network.partitionLabel;
        traceFn(`[${cluster.now}] partition: ${lastPartition}`);
      }
      workload.clients(true, true);
      workload.nemesis();
      churn.tick();
      stalls.tick();
      cluster.endTick();
    }
    phase = 'liveness';
    traceFn?.(`[${cluster.now}] heal: restart all, lift every fault`);
    cluster.network.heal(cluster.now);
    cluster.reviveAll();
    livenessPhase(opts, cluster, workload);
    if (opts.network.partitionMode === 'howard' && opts.preVote && opts.checkQuorum) {
      phase = 'stability';
      traceFn?.(`[${cluster.now}] partition: howard (stable window)`);
      stabilityPhase(opts, cluster, workload);
    }
    return result();
  } catch (e) {
    const err = e as Error;
    const kind = e instanceof SafetyViolation ? e.checker : e instanceof PhaseFailure ? e.kind : 'Exception';
    return result({ kind, message: err.message, phase, tick: cluster.now, ...(kind === 'Exception' ? { stack: err.stack ?? '' } : {}) });
  }
}

/** The VOPR's liveness requirement, in two stages. A: within K ticks of healing, a leader
 *  commits a fresh write and serves a ReadIndex read (the client retries across leader
 *  changes, as real ones do). B: then every member follows that leader and applies the
 *  write, within a bound that scales with how far the slowest member lags, divided by
 *  what the flow-control options (maxInflight, maxMsgBytes) let the leader send per round
 *  trip: a lagging learner behind a 1-message window is slow, not stuck. Background writes
 *  stop after healing so that catching up is possible at all. */
function livenessPhase(opts: SimOptions, cluster: SimCluster, workload: Workload): void {
  const healedAt = cluster.now;
  const nodes = cluster.runningNodes();
  // the new leader may first have to bring a majority through its whole uncommitted tail
  const backlog = Math.max(...nodes.map((n) => n.disk.lastIndex())) - Math.min(...nodes.map((n) => n.app.state.applied));
  const commitBound = opts.livenessTicks + catchUpTicks(opts, backlog);
  // the flow-control bound can be long; a cluster that applies nothing for K ticks is stuck
  const progress = new ProgressWatch(cluster, opts.livenessTicks);
  const retryTicks = 3 * opts.electionTicks;
  let write: { index: number; term: number } | null = null;
  let writeAt = -Infinity, readAt = -Infinity;
  let readCtx: number | null = null;
  let readDone = false;
  let why = 'no leader';
  for (;;) {
    if (cluster.now - healedAt >= commitBound || progress.stalled()) {
      throw new PhaseFailure('Liveness', `${cluster.now - healedAt} ticks after healing (bound ${commitBound}, backlog ${backlog}` +
        `${progress.stalled() ? `, no progress for ${opts.livenessTicks} ticks` : ''}): ${why}\n${dumpCluster(cluster)}`);
    }
    cluster.beginTick();
    workload.clients(false, false);
    workload.operator();
    const leader = cluster.leader();
    const won = write !== null && cluster.checkers.canonicalTerm(write.index) === write.term;
    if (leader && !won && cluster.now - writeAt >= retryTicks) {
      write = workload.propose(leader);
      writeAt = cluster.now;
    }
    if (leader && won && !readDone && cluster.now - readAt >= retryTicks) {
      readCtx = workload.read(leader);
      readAt = cluster.now;
    }
    cluster.endTick();
    progress.observe();
    if (readCtx !== null && cluster.checkers.wasServed(readCtx)) readDone = true;
    why = !leader ? 'no leader' : !won ? 'the fresh write did not commit' : !readDone ? 'the read was not served' : '';
    if (why === '') break;
  }
  const target = write!.index;
  const lag = Math.max(...cluster.runningNodes().map((n) => target - n.app.state.applied));
  const bound = opts.livenessTicks + catchUpTicks(opts, lag);
  const started = cluster.now;
  while ((why = converged(cluster, target)) !== '') {
    if (cluster.now - started >= bound || progress.stalled()) {
      throw new PhaseFailure('Liveness', `members did not converge in ${cluster.now - started} ticks after the write committed (bound ${bound}, lag ${lag}` +
        `${progress.stalled() ? `, no progress for ${opts.livenessTicks} ticks` : ''}): ${why}\n${dumpCluster(cluster)}`);
    }
    cluster.beginTick();
    workload.clients(false, false);
    workload.operator();
    cluster.endTick();
    progress.observe();
  }
}

/** notices when no running node has applied or stored anything new for `ticks` ticks
 *  (stored counts: a new leader's old-term tail commits only once all of it is replicated) */
class ProgressWatch {
  private last = -1;
  private since: number;
  constructor(private readonly cluster: SimCluster, private readonly ticks: number) {
    this.since = cluster.now;
  }
  observe(): void {
    let sum = 0;
    for (const n of this.cluster.runningNodes()) sum += n.app.state.applied + n.disk.lastIndex();
    if (sum !== this.last) {
      this.last = sum;
      this.since = this.cluster.now;
    }
  }
  stalled(): boolean {
    return this.cluster.now - this.since >= this.ticks;
  }
}

/** one line per node: what a liveness failure needs to be understood */
function dumpCluster(cluster: SimCluster): string {
  return cluster.ids.map((id) => {
    const n = cluster.node(id);
    if (!n) return `  ${id}: ${cluster.decommissioned.has(id) ? 'decommissioned' : 'down'}`;
    const s = n.raw.status();
    const prs = s.progress
      ? ' progress ' + Object.entries(s.progress).map(([p, pr]) => `${p}:${pr.state}/m${pr.match}/n${pr.next}${pr.learner ? '/L' : ''}${pr.recentActive ? '' : '/inactive'}`).join(' ')
      : '';
    return `  ${id}: ${s.role} term ${s.term} vote ${s.vote} leader ${s.leader} commit ${s.commit} applied ${s.applied} ` +
      `last ${s.lastIndex} first ${n.disk.firstIndex()} voters [${s.conf.voters}] learners [${s.conf.learners}]${s.standing ? ` ${s.standing} (${n.disk.diskId})` : ""}${prs}`;
  }).join('\n');
}

/** generous time to ship `entries` entries under the flow-control options: a window of
 *  maxInflight messages of maxMsgBytes per round trip, but no wider than half a link's
 *  capacity (a burst beyond it overflows, the follower sees a gap and the leader falls back
 *  to probing), with 3× slack for the exponential delay tail */
function catchUpTicks(opts: SimOptions, entries: number): number {
  const perMsg = Math.max(1, Math.floor(opts.maxMsgBytes / (opts.workload.payloadBytesMax + 24)));
  const window = Math.max(1, Math.min(opts.maxInflight, Math.floor(opts.network.linkCapacity / 2)));
  const roundTrip = 2 * opts.network.delayMeanTicks + opts.heartbeatTicks;
  return Math.ceil((3 * Math.max(0, entries) * roundTrip) / (perMsg * window));
}

/** '' when every member of the leader's configuration follows it and applied `index` */
function converged(cluster: SimCluster, index: number): string {
  const leader = cluster.leader();
  if (!leader) return 'no leader';
  const st = leader.raw.status();
  for (const id of [...st.conf.voters, ...st.conf.learners]) {
    const n = cluster.node(id);
    if (!n) return `member ${id} is not running`;
    const s = n.raw.status();
    if (s.term !== st.term || s.leader !== leader.id) return `${id} follows ${s.leader} in term ${s.term}, leader is ${leader.id} in term ${st.term}`;
    if (n.app.state.applied < index) return `${id} applied ${n.app.state.applied} < ${index}`;
  }
  return '';
}

/** Howard's partial partition with PreVote + CheckQuorum: at most one leader change */
function stabilityPhase(opts: SimOptions, cluster: SimCluster, workload: Workload): void {
  cluster.network.howardPartition(cluster.now);
  const before = cluster.checkers.counts.leaders;
  for (let t = 0; t < opts.stableWindowTicks; t++) {
    cluster.beginTick();
    workload.clients(false, true);
    cluster.endTick();
  }
  const changes = cluster.checkers.counts.leaders - before;
  if (changes > 1) {
    const terms = [...cluster.checkers.leaderTerms()].slice(-changes).map(([t, id]) => `${id}@${t}`).join(' ');
    throw new PhaseFailure('Stability', `${changes} leader changes in a ${opts.stableWindowTicks}-tick window of Howard's partial partition (${terms})`);
  }
}
