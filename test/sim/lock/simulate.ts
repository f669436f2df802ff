// One lock-level schedule (docs/simulation-lock.md): N × {RawNode + RaftDriver + LockApp +
// Lessor} over SimNetwork/MemoryDurableStorage and a simulated clock (nowMs = tick ×
// tickMs), in the VOPR's phases:
//   1. faults: drops, duplicates, delays, partitions, clogs, crashes (between ticks or in
//      the middle of a Ready) with loss of unsynced writes, restarts — with lock clients
//      running; the lock checkers run on every apply and after every tick;
//   2. liveness: heal everything, restart every node; within K ticks a fresh client must
//      be granted a free lock, and every node must apply every acknowledged grant.
// Each tick: deliver due packets in (from, to) order → tick nodes in id order (driver
// tick + lessor proposals) → clients act → drain every driver (twice: continuations of
// resolved proposals may propose again) → nemesis → checkers.
import { seededRng, type Rng } from '../../../src/raft/core/rng.js';
import type { NodeId } from '../../../src/raft/core/types.js';
import { drawOptions, subsystemRngs, type SimOptions } from '../options.js';
import { SimNetwork, type NetEvent } from '../network.js';
import { MemoryDurableStorage } from '../../../src/raft/storage/memory-durable-storage.js';
import { LockNode, RAFT_KNOBS, SimulatedCrash, type LessorFault, type LockMutations, type NodeParams } from './node.js';
import type { Command } from '../../../src/lock-fsm/index.js';
import { MemoryTransport } from '../../../src/transport/memory-transport.js';
import { LockCheckers, LockViolation } from '../../checkers/apply/lock-checkers.js';
import { LockWorkload, type WorkloadParams } from './workload.js';
import { inIdOrder } from '../../support/id-order.js';

export interface LockSimOptions {
  seed: number;
  ticks: number;
  raft: SimOptions;
  node: NodeParams;
  workload: WorkloadParams;
  livenessTicks: number;
  faults: LockFaults;
}

/** lock-level faults, drawn from a stream of their own (so the knobs above stay as they
 *  were for every seed) */
export interface LockFaults {
  /** per lessor proposal: held back beyond the proposal timeout before it is proposed */
  lessorDelayProbability: number;
  /** per lessor proposal: 1-4 more copies are proposed beyond the proposal timeout */
  lessorDuplicateProbability: number;
  /** lag unit: a held-back proposal waits proposal timeout + Exp(unit); copy k comes
   *  proposal timeout + k × unit × U(0.5, 1.5) later */
  lessorLagMeanTicks: number;
  /** at this tick (0: never) the leader's wall clock steps forward by clockStepMs */
  clockStepTick: number;
  clockStepMs: number;
}

/** the ticks a lock schedule runs unless told (`--ticks`) */
export const DEFAULT_LOCK_TICKS = 1500;

/** the Raft and fault knobs come from test/sim's swarm (same seed → same mix); the lock
 *  knobs from a stream of their own */
export function drawLockOptions(seed: number, ticks = DEFAULT_LOCK_TICKS): LockSimOptions {
  const raft = drawOptions(seed, ticks);
  const rng = lockRng(seed);
  const tickMs = 10;
  const electionMs = raft.electionTicks * tickMs;
  const ttlMs = Math.round(electionMs * (4 + rng.next() * 8));
  const node: NodeParams = {
    ...pickKnobs(raft), tickMs,
    snapshotEveryEntries: [8, 32, 128, 100_000][rng.int(0, 4)]!,
    proposalTimeoutMs: 3 * 2 * electionMs,
  };
  const workload: WorkloadParams = {
    clients: rng.int(2, 9), locks: rng.int(1, 6), actProbability: 0.02 + rng.next() * 0.2,
    ttlMs, lockDelayMs: Math.round(ttlMs * rng.next()), lockDelayShare: rng.next() < 0.3 ? 0 : rng.next(),
    abandonShare: rng.next() * 0.5, waitMs: Math.round(ttlMs * (0.2 + rng.next())), tickMs,
    readTimeoutMs: 2 * 2 * electionMs,
    ...modeKnobs(seed),
    ...holdKnobs(seed),
    ...setKnobs(seed),
  };
  const f = faultRng(seed);
  const lag = rngHalf(f);
  const faults: LockFaults = {
    lessorDelayProbability: lag ? f.next() * 0.3 : 0,
    lessorDuplicateProbability: lag ? f.next() * 0.5 : 0,
    lessorLagMeanTicks: Math.round(ttlMs / tickMs) * (1 + f.int(0, 2)),
    clockStepTick: f.next() < 0.5 ? f.int(Math.floor(ticks / 4), Math.max(Math.floor(ticks / 4) + 1, Math.floor((3 * ticks) / 4))) : 0,
    clockStepMs: (11 + f.int(0, 50)) * 60_000,
  };
  return { seed, ticks, raft, node, workload, livenessTicks: 40 * raft.electionTicks, faults };
}

/** the shared-lock and semaphore knobs, from a stream past faultRng's (the earlier
 *  streams keep their draws, so the exclusive workload of a seed is drawn as before);
 *  a quarter of the seeds run the exclusive workload alone */
function modeKnobs(seed: number): Pick<WorkloadParams, 'modeShare' | 'semaphores' | 'semLimit' | 'maxLimit' | 'electionShare' | 'elections'> {
  const m = modeRng(seed);
  const maxLimit = m.int(1, 6);
  const knobs = { modeShare: m.next() < 0.25 ? 0 : 0.1 + m.next() * 0.4, semaphores: m.int(1, 4), semLimit: m.int(1, maxLimit + 1), maxLimit };
  // drawn after the others, so their values per seed are as before elections existed;
  // a third of the seeds run no election step
  return { ...knobs, electionShare: m.next() < 0.33 ? 0 : 0.1 + m.next() * 0.3, elections: m.int(1, 3) };
}

/** the max-hold and revoke knobs, from a stream of their own (past electionRng's): a third
 *  of the seeds put no max hold on any grant, half revoke nothing */
function holdKnobs(seed: number): Pick<WorkloadParams, 'holdShare' | 'revokeShare'> {
  const h = holdRng(seed);
  return { holdShare: h.next() < 0.33 ? 0 : 0.2 + h.next() * 0.5, revokeShare: h.next() < 0.5 ? 0 : 0.01 + h.next() * 0.05 };
}

/** the lock-set knobs, from a stream of their own (past stallRng's): a third of the seeds
 *  take no lock set and no opposite-order pair (their schedules are as before sets existed) */
function setKnobs(seed: number): Pick<WorkloadParams, 'setShare'> {
  const t = setRng(seed);
  return { setShare: t.next() < 0.33 ? 0 : 0.1 + t.next() * 0.3 };
}

/** the lock-set draws: the knobs come first, the workload's draws from a fork */
/** the late copies' draws (LockWorkload.lateCopy): a stream of their own */
export function lateRng(seed: number): Rng {
  const root = seededRng(seed);
  for (let k = 0; k < 14; k++) root.fork();
  return root.fork();
}

export function setRng(seed: number): Rng {
  const root = seededRng(seed);
  for (let k = 0; k < 13; k++) root.fork();
  return root.fork();
}

/** the max-hold and revoke draws: the knobs come first, the workload's draws from a fork */
export function holdRng(seed: number): Rng {
  const root = seededRng(seed);
  for (let k = 0; k < 10; k++) root.fork();
  return root.fork();
}

/** the workload's election draws (a stream past modeRng's) */
export function electionRng(seed: number): Rng {
  const root = seededRng(seed);
  for (let k = 0; k < 9; k++) root.fork();
  return root.fork();
}

/** the workload's shared-lock and semaphore draws (the knobs' stream forked once more) */
export function modeRng(seed: number): Rng {
  const root = seededRng(seed);
  for (let k = 0; k < 8; k++) root.fork();
  return root.fork();
}

function rngHalf(r: Rng): boolean {
  return r.next() < 0.5;
}

function lockRng(seed: number): Rng {
  // past the six streams test/sim's subsystemRngs forks from the same root
  const root = seededRng(seed);
  for (let k = 0; k < 6; k++) root.fork();
  return root.fork();
}

/** the disk stalls' stream: past every other stream of the seed (test/sim's stall stream
 *  included) */
function stallRng(seed: number): Rng {
  const root = seededRng(seed);
  for (let k = 0; k < 12; k++) root.fork();
  return root.fork();
}

/** the lock faults' stream: past lockRng's */
function faultRng(seed: number): Rng {
  const root = seededRng(seed);
  for (let k = 0; k < 7; k++) root.fork();
  return root.fork();
}

export interface LockScheduleResult {
  seed: number;
  ok: boolean;
  ticks: number;
  phase: 'faults' | 'liveness';
  failure?: { kind: string; message: string; stack?: string };
  stats: Record<string, number>;
  trace: string[];
}

export class LockCluster {
  tick = 0;
  readonly network: SimNetwork;
  readonly checkers: LockCheckers;
  readonly ids: readonly NodeId[];
  readonly nodes = new Map<NodeId, LockNode>();
  /** running() in id order, rebuilt only after a node starts or stops (it is asked for
   *  several times per tick) */
  private runningList: readonly LockNode[] | null = null;
  private readonly disks = new Map<NodeId, MemoryDurableStorage>();
  private readonly incarnations = new Map<NodeId, number>();
  readonly downUntil = new Map<NodeId, number>();
  private readonly fatal = new Set<NodeId>();
  /** the first error thrown where the driver or a promise would swallow it (hooks run
   *  inside the driver's loop, whose catch turns any throw into a fail-stop) */
  failure: unknown = null;
  readonly stats = { crashes: 0, midReadyCrashes: 0, restarts: 0, snapshotsRestored: 0, leaderChanges: 0, lessorExpire: 0, lessorEndDelay: 0, lessorCancelWait: 0, lessorExpireHold: 0, lessorDelayed: 0, lessorDuplicated: 0, clockSteps: 0, maxLogIndex: 0, diskStalls: 0, coverHeartbeats: 0 };
  /** wall-clock step per node (the clock-step fault) */
  private readonly wallStep = new Map<NodeId, number>();
  private readonly faultRng: Rng;
  /** the disk-stall fault's draws (test/sim's knobs, a stream of its own) */
  private readonly stallRng: Rng;

  constructor(readonly o: LockSimOptions, private readonly core: Rng, disk: Rng, net: Rng, private readonly trace: (l: string) => void, private readonly mutations: LockMutations = {}) {
    this.faultRng = faultRng(o.seed).fork();
    this.stallRng = stallRng(o.seed);
    this.network = new SimNetwork(o.raft.network, net, () => this.tick);
    // the wallClockStamps mutation makes log time a wall clock: the max-hold time checks,
    // which rest on log time running no faster than real time, are off under it
    this.checkers = new LockCheckers(() => this.nowMs(), { tickMs: o.node.tickMs, timedHolds: mutations.wallClockStamps !== true });
    this.ids = Array.from({ length: o.raft.nodeCount }, (_, k) => `n${k + 1}`);
    for (const id of this.ids) {
      this.network.addNode(id);
      this.disks.set(id, new MemoryDurableStorage({ voters: [...this.ids], learners: [] }, { rng: disk.fork() }));
      this.incarnations.set(id, 0);
      this.start(id);
    }
  }

  nowMs(): number {
    return this.tick * this.o.node.tickMs;
  }

  private start(id: NodeId): void {
    const inc = this.incarnations.get(id)! + 1;
    this.incarnations.set(id, inc);
    const t = new MemoryTransport(id, this.network, inc);
    const node = new LockNode(id, inc, this.disks.get(id)!, t, this.o.node, this.core.fork(), {
      nowMs: () => this.nowMs(),
      onApplied: (n, index, term, kind, data, out) => this.guard(() => this.checkers.onApplied(n, index, term, kind, data, out)),
      onRestored: (n) => {
        this.stats.snapshotsRestored++;
        this.guard(() => this.checkers.onRestored(n));
      },
      onRoleChange: (n, role, term) => {
        if (role === 'leader') {
          this.guard(() => this.checkers.onPromoted(n));
          this.stats.leaderChanges++;
          this.trace(`[${this.tick}] ${n.id} leads term ${term}`);
        }
      },
      onFatal: (n, err) => {
        if (err instanceof SimulatedCrash) this.fatal.add(n.id);
        else this.failure ??= err;
      },
      onLessorProposal: (cmd) => {
        if (cmd.kind === 'expireSession') this.stats.lessorExpire++;
        else if (cmd.kind === 'endLockDelay') this.stats.lessorEndDelay++;
        else if (cmd.kind === 'expireHold') this.stats.lessorExpireHold++;
        else this.stats.lessorCancelWait++;
      },
      onCoverHeartbeats: (k) => {
        this.stats.coverHeartbeats += k;
      },
      onWaitTracked: (n, target, name, sid, since, deadlineMs) => this.checkers.waitBound.onApiTracked(`${n.id}/${n.driver.currentTerm}`, target, name, sid, since, deadlineMs),
      onProposed: (n, term, data) => this.checkers.onProposed(n.id, term, data, this.nowMs()),
      wallMs: (nid) => this.nowMs() + (this.wallStep.get(nid) ?? 0),
      lessorFault: (cmd) => {
        const f = this.lessorFault(cmd);
        // a held-back expireHold is proposed after entries its leader stamps later: that
        // leader's max-hold deadline is excused (test/checkers/apply/hold-checker.ts)
        const n = this.nodes.get(id);
        if (cmd.kind === 'expireHold' && f.delayTicks > 0 && n) this.checkers.holds.excuse(cmd.fencingToken, `${id}/${n.driver.currentTerm}`);
        // the same for a held-back cancel and the wait it ends (test/checkers/apply/wait-checker.ts)
        if ((cmd.kind === 'cancelWait' || cmd.kind === 'semCancelWait') && f.delayTicks > 0 && n) {
          this.checkers.waitBound.excuse(cmd.kind === 'semCancelWait' ? 'semaphore' : 'lock', cmd.name, cmd.sessionId, `${id}/${n.driver.currentTerm}`);
        }
        return f;
      },
      tick: () => this.tick,
    }, this.mutations);
    this.checkers.onRestored(node);
    this.nodes.set(id, node);
    this.runningList = null;
    this.downUntil.delete(id);
  }

  /** the liveness phase lifts the lock faults too */
  healed = false;

  private lessorFault(_cmd: Command): LessorFault {
    const f = this.o.faults;
    if (this.healed || (f.lessorDelayProbability === 0 && f.lessorDuplicateProbability === 0)) return { delayTicks: 0, copies: [] };
    const r = this.faultRng;
    const timeout = Math.ceil(this.o.node.proposalTimeoutMs / this.o.node.tickMs) + 1;
    const delayTicks = r.next() < f.lessorDelayProbability ? timeout + Math.round(-Math.log(1 - r.next()) * f.lessorLagMeanTicks) : 0;
    // 1-4 late copies spread over several TTLs: the item the command named is long over
    // by then, and a later item of the same lock or wait may be running
    const copies: number[] = [];
    if (r.next() < f.lessorDuplicateProbability) {
      const n = r.int(1, 5);
      for (let k = 1; k <= n; k++) copies.push(timeout + Math.round(k * f.lessorLagMeanTicks * (0.5 + r.next())));
    }
    const land = copies.length > 0 && r.next() < 0.5;
    if (delayTicks > 0) this.stats.lessorDelayed++;
    this.stats.lessorDuplicated += copies.length + (land ? 1 : 0);
    return { delayTicks, copies, ...(land ? { landInNext: { afterTicks: timeout } } : {}) };
  }

  /** the disk-stall fault (test/sim/raft/disk-stalls.ts, with its knobs): now and then
   *  one node's next synced write takes whole ticks, its driver's loop waits, and the
   *  driver's heartbeat cover keeps a leader heard (src/raft/heartbeat-cover.ts) */
  stallFaults(): void {
    const d = this.o.raft.disk;
    if (d.stallProbability === 0 || this.stallRng.next() >= d.stallProbability) return;
    const leader = this.stallRng.next() < d.stallLeaderBias ? this.leader() : null;
    const up = this.running();
    const victim = leader ?? (up.length > 0 ? up[this.stallRng.int(0, up.length)]! : null);
    const ticks = 1 + Math.round(-Math.log(1 - this.stallRng.next()) * d.stallTicksMean);
    if (victim === null || victim.diskStalled || victim.stallArmed) return;
    victim.armStall(ticks);
    this.stats.diskStalls++;
  }

  /** the clock-step fault: the leader's wall clock jumps forward (only a mutation that
   *  stamps wall-clock time lets it matter) */
  clockFaults(): void {
    const f = this.o.faults;
    if (f.clockStepTick === 0 || this.tick !== f.clockStepTick) return;
    const victim = this.leader() ?? this.running()[0];
    if (!victim) return;
    this.wallStep.set(victim.id, (this.wallStep.get(victim.id) ?? 0) + f.clockStepMs);
    this.stats.clockSteps++;
    this.trace(`[${this.tick}] ${victim.id}'s wall clock steps ${f.clockStepMs / 60_000} min forward`);
  }

  guard(f: () => void): void {
    try {
      f();
    } catch (err) {
      this.failure ??= err;
      throw err;
    }
  }

  /** rethrow what a hook or a client continuation recorded */
  assertNoFailure(): void {
    if (this.failure !== null) throw this.failure;
  }

  running(): readonly LockNode[] {
    this.runningList ??= inIdOrder(this.ids, this.nodes);
    return this.runningList;
  }

  incarnation(id: NodeId): number | null {
    return this.nodes.get(id)?.incarnation ?? null;
  }

  /** the running leader with the highest term (what a client's leader discovery finds) */
  leader(): LockNode | null {
    let best: LockNode | null = null;
    for (const n of this.running()) if (n.isLeader && (!best || n.driver.currentTerm > best.driver.currentTerm)) best = n;
    return best;
  }

  async crash(id: NodeId, downTicks: number, midReady: boolean): Promise<void> {
    const n = this.nodes.get(id);
    if (!n) return;
    if (midReady) {
      n.armCrash();
      this.downUntil.set(id, this.tick + downTicks);
      return;
    }
    await this.kill(n, this.tick + downTicks);
  }

  private async kill(n: LockNode, until: number): Promise<void> {
    this.nodes.delete(n.id);
    this.runningList = null;
    await n.stop();
    this.fatal.delete(n.id); // a write that was out failed with it: not a crash of the next incarnation
    this.disks.get(n.id)!.crash(this.o.raft.crash.loseUnsynced);
    this.downUntil.set(n.id, until);
    this.stats.crashes++;
    this.trace(`[${this.tick}] crash ${n.id}`);
  }

  restartDue(all = false): void {
    for (const [id, until] of [...this.downUntil]) {
      if (this.nodes.has(id)) continue;
      if (all || until <= this.tick) {
        this.start(id);
        this.stats.restarts++;
        this.trace(`[${this.tick}] restart ${id}`);
      }
    }
  }

  private deliver(ev: NetEvent): void {
    if (ev.kind === 'message') {
      this.nodes.get(ev.msg.to)?.transport.deliver(ev.msg);
      return;
    }
    const n = this.nodes.get(ev.node);
    if (!n || n.incarnation !== ev.inc) return;
    if (ev.kind === 'unreachable') n.transport.unreachable(ev.peer);
    else n.transport.snapshotStatus(ev.peer, ev.ok);
  }

  beginTick(): void {
    this.tick++;
    this.restartDue();
    for (const n of this.running()) n.releaseDisk(this.tick);
    this.network.deliverDue(this.tick, this, (ev) => this.deliver(ev));
    for (const n of this.running()) n.tick();
  }

  /** run every driver until idle; resolved proposals' continuations run in between */
  async drainAll(): Promise<void> {
    for (let pass = 0; pass < 3; pass++) {
      // a driver whose write is out waits for it; its inputs queue in its inbox meanwhile
      for (const n of this.running()) {
        if (n.diskStalled) continue;
        const began = n.stallBegan(); // before drain(): the write may be issued inside it, synchronously
        await Promise.race([n.driver.drain(), began]);
      }
      await settle();
      this.assertNoFailure();
    }
    for (const id of [...this.fatal]) {
      this.fatal.delete(id);
      const n = this.nodes.get(id);
      if (n) {
        this.stats.midReadyCrashes++;
        await this.kill(n, this.downUntil.get(id) ?? this.tick + 1);
      }
    }
  }

  endTick(): void {
    this.assertNoFailure();
    // the longest log any node holds (the re-proposal storm grew it without bound)
    for (const n of this.running()) this.stats.maxLogIndex = Math.max(this.stats.maxLogIndex, n.disk.lastIndex());
    this.checkers.compareStates(this.running());
    this.checkers.checkKeys(this.running());
  }
}

/** let every queued microtask (promise continuation) run */
async function settle(): Promise<void> {
  for (let k = 0; k < 20; k++) await Promise.resolve();
}

export async function runLockSchedule(seed: number, cfg: { ticks?: number; traceLines?: number; onTrace?: (l: string) => void; mutations?: LockMutations } = {}): Promise<LockScheduleResult> {
  const o = drawLockOptions(seed, cfg.ticks ?? DEFAULT_LOCK_TICKS);
  const rngs = subsystemRngs(seed);
  const trace: string[] = [];
  const keep = cfg.traceLines ?? 200;
  const traceFn = (l: string): void => {
    cfg.onTrace?.(l);
    trace.push(l);
    if (trace.length > keep) trace.shift();
  };
  const cluster = new LockCluster(o, rngs.core, rngs.disk, rngs.network, traceFn, cfg.mutations ?? {});
  const workload = new LockWorkload(o.workload, {
    now: () => cluster.tick, nowMs: () => cluster.nowMs(), leader: () => cluster.leader(),
    fail: (err) => {
      cluster.failure ??= err;
    },
  }, cluster.checkers, rngs.workload, modeRng(seed).fork(), electionRng(seed), holdRng(seed).fork(), setRng(seed).fork(), lateRng(seed));
  const nemesis = rngs.nemesis;
  let phase: 'faults' | 'liveness' = 'faults';
  const done = (failure?: LockScheduleResult['failure']): LockScheduleResult => ({
    seed, ok: !failure, ticks: cluster.tick, phase, trace, ...(failure ? { failure } : {}),
    stats: { ...cluster.stats, ...cluster.network.stats, ...cluster.checkers.counts, ...cluster.checkers.modes.counts, ...cluster.checkers.elections.counts, ...cluster.checkers.holds.counts, ...cluster.checkers.waitBound.counts, ...cluster.checkers.sets.counts, ...workload.stats, committed: cluster.checkers.maxApplied },
  });
  try {
    for (let t = 0; t < o.ticks; t++) {
      cluster.beginTick();
      cluster.network.tickFaults(cluster.tick, () => cluster.leader()?.id ?? null);
      cluster.clockFaults();
      cluster.stallFaults();
      workload.wake();
      workload.act();
      await cluster.drainAll();
      await nemesisStep(o, cluster, nemesis);
      cluster.endTick();
    }
    phase = 'liveness';
    traceFn(`[${cluster.tick}] heal: restart all, lift every fault`);
    cluster.network.heal(cluster.tick);
    cluster.healed = true;
    cluster.restartDue(true);
    await liveness(o, cluster, workload);
    return done();
  } catch (caught) {
    // the first failure wins: a later throw may only be its consequence
    const e = cluster.failure ?? caught;
    const err = e as Error;
    const kind = e instanceof LockViolation ? e.checker : e instanceof LivenessFailure ? 'Liveness' : 'Exception';
    return done({ kind, message: err.message, ...(kind === 'Exception' ? { stack: err.stack ?? '' } : {}) });
  }
}

class LivenessFailure extends Error {}

async function nemesisStep(o: LockSimOptions, cluster: LockCluster, rng: Rng): Promise<void> {
  const c = o.raft.crash;
  if (c.crashProbability === 0 || rng.next() >= c.crashProbability) return;
  const up = cluster.running();
  if (up.length === 0) return;
  const leader = cluster.leader();
  const victim = leader && rng.next() < c.leaderBias ? leader : up[rng.int(0, up.length)]!;
  const down = 1 + Math.round(-Math.log(1 - rng.next()) * c.downTicksMean);
  await cluster.crash(victim.id, down, rng.next() < c.midReadyProbability);
}

/** after healing: a fresh acquire on a free lock is granted within K ticks, then every
 *  node applies through every acknowledged grant */
async function liveness(o: LockSimOptions, cluster: LockCluster, workload: LockWorkload): Promise<void> {
  const healed = cluster.tick;
  // a slow seed (a 1-message window, one entry per message) may first have to replicate a
  // long backlog: allow for it as the Raft mode does (catchUpTicks), on top of K
  const nodes = cluster.running();
  const backlog = Math.max(...nodes.map((n) => n.disk.lastIndex())) - Math.min(...nodes.map((n) => n.driver.appliedIndex));
  const K = o.livenessTicks + catchUpTicks(o, backlog);
  let granted: number | null = null;
  let attempt: Promise<void> | null = null;
  const name = `fresh-${o.seed}`;
  while (granted === null) {
    if (cluster.tick - healed >= K) throw new LivenessFailure(`no grant of a free lock within ${K} ticks of healing (backlog ${backlog})\n${dump(cluster)}`);
    cluster.beginTick();
    workload.wake();
    workload.act(true); // keepalives only: no new writes, so catching up is possible at all
    const leader = cluster.leader();
    if (attempt === null && leader) {
      attempt = workload.freshAcquire(leader, name).then(
        (t) => {
          granted = t;
          attempt = null;
        },
        (err: unknown) => {
          cluster.failure ??= err;
        },
      );
    }
    await cluster.drainAll();
    cluster.endTick();
  }
  const started = cluster.tick;
  for (;;) {
    const lagging = cluster.running().filter((n) => n.driver.appliedIndex < cluster.checkers.maxAckedIndex);
    if (lagging.length === 0 && cluster.running().length === cluster.ids.length) break;
    if (cluster.tick - started >= K) throw new LivenessFailure(`nodes ${lagging.map((n) => n.id).join(',')} did not apply through ${cluster.checkers.maxAckedIndex} within ${K} ticks\n${dump(cluster)}`);
    cluster.beginTick();
    workload.wake();
    workload.act(true);
    await cluster.drainAll();
    cluster.endTick();
  }
  cluster.checkers.assertConverged(cluster.running());
}

/** generous time to ship `entries` entries under the flow-control options: maxInflight
 *  messages of maxMsgBytes per round trip (a lock command is ~100 bytes), 3× slack */
function catchUpTicks(o: LockSimOptions, entries: number): number {
  const r = o.raft;
  const perMsg = Math.max(1, Math.floor(r.maxMsgBytes / 130));
  const window = Math.max(1, Math.min(r.maxInflight, Math.floor(r.network.linkCapacity / 2)));
  const roundTrip = 2 * r.network.delayMeanTicks + r.heartbeatTicks;
  return Math.ceil((3 * Math.max(0, entries) * roundTrip) / (perMsg * window));
}

function dump(cluster: LockCluster): string {
  return cluster.ids.map((id) => {
    const n = cluster.nodes.get(id);
    if (!n) return `  ${id}: down`;
    const s = n.raw.status();
    return `  ${id}: ${s.role} term ${s.term} leader ${s.leader} commit ${s.commit} applied ${n.driver.appliedIndex} last ${s.lastIndex}`;
  }).join('\n');
}

function pickKnobs(o: SimOptions): Pick<SimOptions, (typeof RAFT_KNOBS)[number]> {
  return Object.fromEntries(RAFT_KNOBS.map((k) => [k, o[k]])) as Pick<SimOptions, (typeof RAFT_KNOBS)[number]>;
}
