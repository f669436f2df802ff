// The workloads, as closed-loop clients with one request in flight each (BENCHMARKS.md):
//   uncontended  each client its own session and lock: acquire → release
//   contended    every client on ONE lock: blocking acquire (FIFO wait) → release
//   churn        open session → acquire → release → close session
//   keepalive    `sessions` sessions spread over the clients, renewed round-robin
//   read         linearizable reads of a lock the client holds
//   shared       readers and writers 9:1 on SHARED_LOCKS locks: blocking shared (read) or
//                exclusive (write) acquire → release; each client writes every tenth cycle
//   semaphore    every client on ONE semaphore of limit SEMAPHORE_LIMIT: blocking acquire
//                of one permit → release
// shared and semaphore need the target's ModeOps (raftlock only: etcd has no such primitive).
// A run warms up, then measures for `durationMs`: it counts operations that complete
// inside the window, records the latency of the measured request (acquire, keepalive or
// read) into an HDR histogram in microseconds, and reads the leader's Raft counters at
// both ends of the window.
import { build, type Histogram } from 'hdr-histogram-js';
import { HttpStatusError } from './http.js';
import type { LockTarget, RaftCounters, SystemName } from './target.js';
import type { ClientKind, Topology } from './options.js';

export const WORKLOADS = ['uncontended', 'contended', 'churn', 'keepalive', 'read', 'shared', 'semaphore'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

/** workloads of shared locks and semaphores: only a target with ModeOps runs them */
export const MODE_WORKLOADS: ReadonlySet<WorkloadName> = new Set(['shared', 'semaphore']);
/** shared: the clients spread over this many locks (client i on lock i mod SHARED_LOCKS) */
export const SHARED_LOCKS = 4;
/** shared: one cycle in this many is a write (exclusive); the others read (shared) */
export const WRITE_EVERY = 10;
/** semaphore: the limit of the one semaphore every client acquires a permit of */
export const SEMAPHORE_LIMIT = 4;

/** does a system run this workload? (etcd, without ModeOps, runs no shared or semaphore row) */
export function supports(hasModes: boolean, w: WorkloadName): boolean {
  return hasModes || !MODE_WORKLOADS.has(w);
}

export interface RunSpec {
  workload: WorkloadName;
  clients: number;
  durationMs: number;
  warmupMs: number;
  /** keepalive: how many sessions the clients renew between them */
  sessions: number;
  /** unique per run, so runs never share lock names */
  runId: string;
  /** when set, every measured request's start and end (performance.now ms) is pushed here
   *  (the per-step trace, trace.ts) */
  samples?: { t0: number; t1: number }[];
}

/** one operation's measured request, and (uncontended) its release: performance.now() ms */
interface Timing {
  t0: number;
  t1: number;
  /** the release's own latency, ms (uncontended: the second commit of a cycle) */
  releaseMs?: number;
}

export interface RunResult {
  system: SystemName;
  workload: WorkloadName;
  clients: number;
  /** where and how the clients talked (main.ts sets them; runWorkload says leader/raw) */
  topology: Topology;
  client: ClientKind;
  /** operations (cycles, grants, keepalives, reads) completed in the window */
  ops: number;
  seconds: number;
  opsPerSec: number;
  /** microseconds of the measured request */
  latency: Histogram;
  /** uncontended: microseconds of each cycle's release (a commit like the acquire) */
  releaseLatency: Histogram | null;
  errors: Record<string, number>;
  entriesPerOp: number | null;
  fsyncsPerOp: number | null;
  /** mean duration of the leader's synced writes in the window, ms */
  syncMs: number | null;
  /** Raft messages the leader sent per op (raftlock) */
  peerMsgsPerOp: number | null;
  /** CPU milliseconds per op, all cluster members together */
  cpuMsPerOp: number | null;
  /** how busy each process was over the window, in cores (1 = one core all the time):
   *  the leader the clients talk to, each other member, and this load generator */
  busy: Busy | null;
}

export interface Busy {
  leader: number;
  followers: number[];
  generator: number;
}

/** Long enough that no lease/session lapses during a run (both systems get the same). */
export function sessionTtlMs(spec: RunSpec): number {
  return Math.max(60_000, 3 * (spec.warmupMs + spec.durationMs));
}

const WAIT_MS = 120_000;

interface Window {
  start: number;
  end: number;
}

interface ClientLoop {
  /** one operation; returns the measured request's start and end (performance.now ms) */
  cycle(): Promise<Timing>;
  teardown(): Promise<void>;
}

type SetupFn = (t: LockTarget, spec: RunSpec, i: number) => Promise<ClientLoop>;

async function timed(f: () => Promise<unknown>): Promise<{ t0: number; t1: number }> {
  const t0 = performance.now();
  await f();
  return { t0, t1: performance.now() };
}

function modesOf(t: LockTarget): NonNullable<LockTarget['modes']> {
  if (!t.modes) throw new Error(`${t.system} has no shared locks or semaphores`);
  return t.modes;
}

const setups: Record<WorkloadName, SetupFn> = {
  async shared(t, spec, i) {
    const m = modesOf(t);
    const sid = await t.openSession(sessionTtlMs(spec));
    const name = `${spec.runId}/s${i % SHARED_LOCKS}`;
    // the clients' writes are staggered (client i writes at cycles i, i+10, …) so the 9:1
    // mix holds at every moment, not only on average
    let n = i;
    return {
      async cycle() {
        const write = n++ % WRITE_EVERY === 0;
        let handle = '';
        const r = await timed(async () => (handle = write ? await t.acquire(name, sid, WAIT_MS) : await m.acquireShared(name, sid, WAIT_MS)));
        await t.release(name, sid, handle);
        return r;
      },
      teardown: () => t.closeSession(sid),
    };
  },
  async semaphore(t, spec) {
    const m = modesOf(t);
    const sid = await t.openSession(sessionTtlMs(spec));
    const name = `${spec.runId}/sem`;
    return {
      async cycle() {
        const r = await timed(() => m.acquireSemaphore(name, sid, SEMAPHORE_LIMIT, 1, WAIT_MS));
        await m.releaseSemaphore(name, sid);
        return r;
      },
      teardown: () => t.closeSession(sid),
    };
  },
  async uncontended(t, spec, i) {
    const sid = await t.openSession(sessionTtlMs(spec));
    const name = `${spec.runId}/u${i}`;
    return {
      async cycle() {
        let handle = '';
        const r = await timed(async () => (handle = await t.acquire(name, sid, 0)));
        const rel = await timed(() => t.release(name, sid, handle));
        return { ...r, releaseMs: rel.t1 - rel.t0 };
      },
      teardown: () => t.closeSession(sid),
    };
  },
  async contended(t, spec) {
    const sid = await t.openSession(sessionTtlMs(spec));
    const name = `${spec.runId}/hot`;
    return {
      async cycle() {
        let handle = '';
        const r = await timed(async () => (handle = await t.acquire(name, sid, WAIT_MS)));
        await t.release(name, sid, handle);
        return r;
      },
      teardown: () => t.closeSession(sid),
    };
  },
  async churn(t, spec, i) {
    const name = `${spec.runId}/c${i}`;
    return {
      async cycle() {
        const sid = await t.openSession(sessionTtlMs(spec));
        let handle = '';
        const r = await timed(async () => (handle = await t.acquire(name, sid, 0)));
        await t.release(name, sid, handle);
        await t.closeSession(sid);
        return r;
      },
      teardown: async () => undefined,
    };
  },
  async keepalive(t, spec, i) {
    const mine = Math.floor(spec.sessions / spec.clients) + (i < spec.sessions % spec.clients ? 1 : 0);
    const sids: string[] = [];
    for (let k = 0; k < Math.max(1, mine); k++) sids.push(await t.openSession(sessionTtlMs(spec)));
    let next = 0;
    return {
      cycle: () => timed(() => t.keepalive(sids[next++ % sids.length]!)),
      async teardown() {
        for (const s of sids) await t.closeSession(s);
      },
    };
  },
  async read(t, spec, i) {
    const sid = await t.openSession(sessionTtlMs(spec));
    const name = `${spec.runId}/r${i}`;
    const handle = await t.acquire(name, sid, 0);
    return {
      cycle: () => timed(() => t.read(name)),
      async teardown() {
        await t.release(name, sid, handle);
        await t.closeSession(sid);
      },
    };
  },
};

function errorKey(err: unknown): string {
  if (err instanceof HttpStatusError) return `${err.status} ${err.code}`;
  const e = err as { code?: string; message?: string };
  return (e.code ?? e.message ?? String(err)).slice(0, 80);
}

async function readCounters(t: LockTarget, cpu: () => Promise<Record<string, number> | null>): Promise<RaftCounters | null> {
  try {
    const [c, cpuS] = await Promise.all([t.counters(), cpu()]);
    if (c && cpuS !== null) c.memberCpuSeconds = cpuS;
    if (c) {
      const own = process.cpuUsage();
      c.generatorCpuSeconds = (own.user + own.system) / 1e6;
      c.atMs = performance.now();
    }
    return c;
  } catch {
    return null;
  }
}

/**
 * Run one workload against one target. `onProgress(fraction, ops)` is called a few times a
 * second. `leader` reads the Raft counters: a target on the leader's endpoint (the clients'
 * own target when they talk to the leader), whose endpoint is the `leader` of the busy split.
 */
export async function runWorkload(t: LockTarget, spec: RunSpec, onProgress: (fraction: number, ops: number) => void, cpu: () => Promise<Record<string, number> | null>, leader: LockTarget = t): Promise<RunResult> {
  const loops = await Promise.all(Array.from({ length: spec.clients }, (_, i) => setups[spec.workload](t, spec, i)));
  const latency = build({ numberOfSignificantValueDigits: 3 });
  const releaseLatency = spec.workload === 'uncontended' ? build({ numberOfSignificantValueDigits: 3 }) : null;
  const errors: Record<string, number> = {};
  let ops = 0;
  const now = performance.now();
  const w: Window = { start: now + spec.warmupMs, end: now + spec.warmupMs + spec.durationMs };

  let before: Promise<RaftCounters | null> | null = null;
  let after: Promise<RaftCounters | null> | null = null;
  const startTimer = setTimeout(() => (before = readCounters(leader, cpu)), spec.warmupMs);
  const endTimer = setTimeout(() => (after = readCounters(leader, cpu)), spec.warmupMs + spec.durationMs);
  const progress = setInterval(() => onProgress(Math.min(1, (performance.now() - now) / (spec.warmupMs + spec.durationMs)), ops), 250);

  const client = async (loop: ClientLoop): Promise<void> => {
    while (performance.now() < w.end) {
      try {
        const { t0, t1, releaseMs } = await loop.cycle();
        const done = performance.now();
        if (done >= w.start && done <= w.end) {
          ops++;
          if (t0 >= w.start) {
            latency.recordValue(Math.max(1, Math.round((t1 - t0) * 1000)));
            if (releaseMs !== undefined) releaseLatency?.recordValue(Math.max(1, Math.round(releaseMs * 1000)));
            spec.samples?.push({ t0, t1 });
          }
        }
      } catch (err) {
        const k = errorKey(err);
        errors[k] = (errors[k] ?? 0) + 1;
        // back off a little so a failing target does not turn into a busy loop
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  try {
    await Promise.all(loops.map(client));
  } finally {
    clearTimeout(startTimer);
    clearTimeout(endTimer);
    clearInterval(progress);
  }
  onProgress(1, ops);
  // the loops stop at the first completion after w.end, which at low latency can come
  // before the end timer fires (it was set a moment after w.end was computed): read the
  // counters now then, or the row would have no entries/fsyncs/CPU figures
  after ??= readCounters(leader, cpu);
  const c0 = await (before as Promise<RaftCounters | null> | null);
  const c1 = await (after as Promise<RaftCounters | null> | null);
  await Promise.all(loops.map((l) => l.teardown().catch(() => undefined)));

  const seconds = spec.durationMs / 1000;
  const perOp = (f: (c: RaftCounters) => number | undefined): number | null => {
    if (!c0 || !c1 || ops === 0) return null;
    const a = f(c0);
    const b = f(c1);
    return a === undefined || b === undefined ? null : (b - a) / ops;
  };
  const cpuPerOp = perOp((c) => (c.memberCpuSeconds ? Object.values(c.memberCpuSeconds).reduce((a, b) => a + b, 0) : undefined));
  return {
    system: t.system,
    workload: spec.workload,
    clients: spec.clients,
    topology: 'leader',
    client: 'raw',
    ops,
    seconds,
    opsPerSec: ops / seconds,
    latency,
    releaseLatency,
    errors,
    entriesPerOp: perOp((c) => c.entries),
    fsyncsPerOp: perOp((c) => c.fsyncs),
    peerMsgsPerOp: perOp((c) => c.peerMessages),
    cpuMsPerOp: cpuPerOp === null ? null : cpuPerOp * 1000,
    syncMs: c0 && c1 && c1.fsyncs > c0.fsyncs ? (1000 * (c1.fsyncSeconds - c0.fsyncSeconds)) / (c1.fsyncs - c0.fsyncs) : null,
    busy: busyOver(leader.endpoint, c0, c1),
  };
}

/** CPU used between two counter readings, in cores, split into the leader (the endpoint
 *  the clients use), the other members, and the generator */
function busyOver(leader: string, c0: RaftCounters | null, c1: RaftCounters | null): Busy | null {
  const m0 = c0?.memberCpuSeconds;
  const m1 = c1?.memberCpuSeconds;
  if (!c0 || !c1 || !m0 || !m1 || c0.atMs === undefined || c1.atMs === undefined || c1.atMs <= c0.atMs) return null;
  if (c0.generatorCpuSeconds === undefined || c1.generatorCpuSeconds === undefined || !(leader in m1) || !(leader in m0)) return null;
  const seconds = (c1.atMs - c0.atMs) / 1000;
  const cores = (e: string): number => (m1[e]! - (m0[e] ?? 0)) / seconds;
  return {
    leader: cores(leader),
    followers: Object.keys(m1).filter((e) => e !== leader).map(cores),
    generator: (c1.generatorCpuSeconds - c0.generatorCpuSeconds) / seconds,
  };
}
