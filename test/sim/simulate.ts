// One schedule, in the VOPR's phases:
//   1. faults: `ticks` ticks of network faults, crashes and client traffic, checking safety
//      after every tick;
//   2. liveness: heal everything (restart every node, lift partitions, clogs, loss and
//      duplication) and require within K ticks a leader that every member follows, a fresh
//      write committed, applied on every member, and a linearizable read served;
//   3. stability (Howard's partial partition only, with PreVote + CheckQuorum): hold the
//      partition for a window and allow at most one leader change in it.
import { drawOptions, subsystemRngs, type SimOptions } from './options.js';
import { SimCluster } from './cluster.js';
import { Workload } from './workload.js';
import { SafetyViolation } from './checkers.js';

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
}

class PhaseFailure extends Error {
  constructor(readonly kind: 'Liveness' | 'Stability', message: string) {
    super(message);
  }
}

export function runSchedule(seed: number, cfg: RunConfig = {}): ScheduleResult {
  const opts = drawOptions(seed, cfg.ticks ?? 2000);
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
  let phase: Phase = 'faults';
  const result = (failure?: ScheduleFailure): ScheduleResult => ({
    seed, options: opts, ok: failure === undefined, ticks: cluster.now, trace,
    ...(failure ? { failure } : {}),
    stats: {
      ...cluster.stats, ...workload.stats, ...cluster.network.stats, ...cluster.checkers.counts,
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
      workload.clients(true);
      workload.nemesis();
      cluster.endTick();
    }
    phase = 'liveness';
    traceFn?.(`[${cluster.now}] heal: restart all, lift every fault`);
    cluster.network.heal(cluster.now);
    cluster.restartDue(true);
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

/** K ticks to elect a leader everyone follows, commit and apply a fresh write everywhere,
 *  and serve a ReadIndex read; clients retry across leader changes, as real ones do */
function livenessPhase(opts: SimOptions, cluster: SimCluster, workload: Workload): void {
  const deadline = cluster.now + opts.livenessTicks;
  const retryTicks = 3 * opts.electionTicks;
  let write: { index: number; term: number } | null = null;
  let writeAt = -Infinity, readAt = -Infinity;
  let readCtx: number | null = null;
  let readDone = false;
  let why = 'no leader';
  while (cluster.now < deadline) {
    cluster.beginTick();
    workload.clients(false);
    const leader = cluster.leader();
    if (leader) {
      const committed = write !== null && cluster.checkers.maxApplied >= write.index;
      const won = committed && cluster.checkers.canonicalTerm(write!.index) === write!.term;
      if ((!won && (committed || cluster.now - writeAt >= retryTicks))) {
        write = workload.propose(leader);
        writeAt = cluster.now;
      }
      if (won && !readDone && (readCtx === null || cluster.now - readAt >= retryTicks)) {
        readCtx = workload.read(leader);
        readAt = cluster.now;
      }
    }
    cluster.endTick();
    if (readCtx !== null && cluster.checkers.wasServed(readCtx)) readDone = true;
    why = settled(cluster, write, readDone);
    if (why === '') return;
  }
  throw new PhaseFailure('Liveness', `not live ${opts.livenessTicks} ticks after healing: ${why}`);
}

/** '' when the cluster is live: one leader that every running member follows, our write
 *  applied on every member, our read served */
function settled(cluster: SimCluster, write: { index: number; term: number } | null, readDone: boolean): string {
  const leader = cluster.leader();
  if (!leader) return 'no leader';
  const st = leader.raw.status();
  const members = [...st.conf.voters, ...st.conf.learners];
  for (const id of members) {
    const n = cluster.node(id);
    if (!n) return `member ${id} is not running`;
    const s = n.raw.status();
    if (s.term !== st.term || s.leader !== leader.id) return `${id} follows ${s.leader} in term ${s.term}, leader is ${leader.id} in term ${st.term}`;
    if (write === null || n.app.state.applied < write.index) return `write not applied on ${id} (applied ${n.app.state.applied}, write at ${write?.index})`;
  }
  if (write === null || cluster.checkers.canonicalTerm(write.index) !== write.term) return 'write not committed';
  if (!readDone) return 'read not served';
  return '';
}

/** Howard's partial partition with PreVote + CheckQuorum: at most one leader change */
function stabilityPhase(opts: SimOptions, cluster: SimCluster, workload: Workload): void {
  cluster.network.howardPartition(cluster.now);
  const before = cluster.checkers.counts.leaders;
  for (let t = 0; t < opts.stableWindowTicks; t++) {
    cluster.beginTick();
    workload.clients(false);
    cluster.endTick();
  }
  const changes = cluster.checkers.counts.leaders - before;
  if (changes > 1) {
    const terms = [...cluster.checkers.leaderTerms()].slice(-changes).map(([t, id]) => `${id}@${t}`).join(' ');
    throw new PhaseFailure('Stability', `${changes} leader changes in a ${opts.stableWindowTicks}-tick window of Howard's partial partition (${terms})`);
  }
}
