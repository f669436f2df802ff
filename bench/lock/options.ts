// Command line of `npm run bench` (see BENCHMARKS.md). Bad input stops with one line.
import { Command, InvalidArgumentError } from 'commander';
import { parseDuration } from '@raftlock/client';
import { WORKLOADS, type WorkloadName } from './workloads.js';

export interface BenchOptions {
  /** (workload, clients) pairs, in run order */
  matrix: { workload: WorkloadName; clients: number }[];
  durationMs: number;
  warmupMs: number;
  reps: number;
  sessions: number;
  endpoints: string[] | null;
  compare: 'etcd' | null;
  etcdEndpoints: string[] | null;
  json: boolean;
  nodeArgs: string[];
  keep: boolean;
  progress: boolean;
  /** measure N sessions each holding a lock instead of running workloads */
  scale: number | null;
  /** the local cluster's snapshot_every_entries */
  snapshotEvery: number;
  /** per-step trace of uncontended C=1 acquires (bench/lock/trace.ts) */
  trace: boolean;
}

/** bad input found after commander parsed the line (commander prints its own errors) */
export class UsageError extends Error {}

/** the measurement matrix (BENCHMARKS.md "Commands") */
export const SUITE_ISSUE8: { workload: WorkloadName; clients: number }[] = [
  { workload: 'uncontended', clients: 1 },
  { workload: 'uncontended', clients: 16 },
  { workload: 'uncontended', clients: 64 },
  { workload: 'contended', clients: 16 },
  { workload: 'contended', clients: 64 },
  { workload: 'churn', clients: 16 },
  { workload: 'keepalive', clients: 64 },
  { workload: 'read', clients: 16 },
];

/** shared locks and semaphores beside the exclusive lock of the same shape (BENCHMARKS.md) */
export const SUITE_MODES: { workload: WorkloadName; clients: number }[] = [
  { workload: 'contended', clients: 16 },
  { workload: 'shared', clients: 16 },
  { workload: 'semaphore', clients: 16 },
];

/** the second round's rows (BENCHMARKS.md "Second round"): the cost per synced batch, the critical path, keepalive reads */
export const SUITE_ISSUE18: { workload: WorkloadName; clients: number }[] = [
  { workload: 'uncontended', clients: 1 },
  { workload: 'uncontended', clients: 16 },
  { workload: 'uncontended', clients: 64 },
  { workload: 'contended', clients: 16 },
  { workload: 'contended', clients: 64 },
  { workload: 'churn', clients: 16 },
  { workload: 'keepalive', clients: 64 },
];

const SUITES: Record<string, { workload: WorkloadName; clients: number }[]> = { issue8: SUITE_ISSUE8, issue18: SUITE_ISSUE18, modes: SUITE_MODES };

const list = (v: string): string[] => v.split(',').map((s) => s.trim()).filter(Boolean);

function intArg(name: string, min: number, max: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
    return n;
  };
}

function durationArg(name: string) {
  return (v: string): number => {
    try {
      return parseDuration(v, name);
    } catch (e) {
      throw new InvalidArgumentError((e as Error).message);
    }
  };
}

function urls(name: string) {
  return (v: string): string[] => {
    const out = list(v);
    if (out.length === 0) throw new InvalidArgumentError(`${name}: expected comma-separated URLs`);
    for (const u of out) {
      try {
        const p = new URL(u);
        if (p.protocol !== 'http:') throw new Error();
      } catch {
        throw new InvalidArgumentError(`${name}: ${JSON.stringify(u)} is not an http:// URL`);
      }
    }
    return out.map((u) => u.replace(/\/+$/, ''));
  };
}

export function parseOptions(argv: string[]): BenchOptions {
  const cmd = new Command('npm run bench --')
    .description('Load generator for raftlock (BENCHMARKS.md): lock workloads against a 3-node cluster, optionally side by side with etcd')
    .option('-w, --workload <list>', `comma-separated: ${WORKLOADS.join(', ')}, or all (shared and semaphore: raftlock only)`, 'uncontended')
    .option('-c, --clients <list>', 'comma-separated client counts (one request in flight per client)', '16')
    .option('--suite <name>', 'a predefined matrix: issue8 (every row of the issue\'s targets), issue18 (uncontended C=1/16/64, contended C=16/64, churn C=16, keepalive C=64), modes (contended, shared and semaphore at C=16)')
    .option('-d, --duration <dur>', 'measured time per run', durationArg('--duration'), 10_000)
    .option('--warmup <dur>', 'unmeasured time before each run', durationArg('--warmup'), 2_000)
    .option('--reps <n>', 'repetitions per row (with --compare: alternating A/B); medians are reported', intArg('--reps', 1, 100), 1)
    .option('--sessions <n>', 'keepalive: sessions renewed round-robin by the clients', intArg('--sessions', 1, 1_000_000), 1000)
    .option('--endpoints <urls>', 'an existing raftlock cluster (default: start a local 3-node cluster and tear it down)', urls('--endpoints'))
    .option('--compare <system>', 'also run every workload against: etcd (needs `etcd` on the PATH)')
    .option('--etcd-endpoints <urls>', 'with --compare etcd: an existing etcd cluster instead of a local one', urls('--etcd-endpoints'))
    .option('--json', 'print the results as JSON on stdout (tables go to stderr)', false)
    .option('--node-args <flags>', 'extra node flags for the local raftlock nodes, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"', '')
    .option('--keep', 'keep the local clusters\' data dirs and logs', false)
    .option('--no-progress', 'no progress bar')
    .option('--snapshot-every <n>', 'local cluster: snapshot_every_entries (the cluster file default is 10000)', intArg('--snapshot-every', 1, 1_000_000_000), 10_000)
    .option('--scale <n>', 'instead of workloads: N sessions each holding a lock, then RSS, snapshot size and restart time per node (local cluster only)', intArg('--scale', 1, 10_000_000))
    .option('--trace', 'per-step trace of uncontended acquires at C=1 on the local cluster (client → leader → follower save → ack → commit → apply → answer), p50/p99 per step', false)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  cmd.parse(argv, { from: 'user' });
  const o = cmd.opts<{
    workload: string; clients: string; suite?: string; duration: number; warmup: number; reps: number; sessions: number;
    endpoints?: string[]; compare?: string; etcdEndpoints?: string[]; json: boolean; nodeArgs: string; keep: boolean; progress: boolean; scale?: number; snapshotEvery: number; trace: boolean;
  }>();

  let matrix: BenchOptions['matrix'];
  if (o.suite !== undefined) {
    const suite = SUITES[o.suite];
    if (suite === undefined) throw new UsageError(`--suite: one of ${Object.keys(SUITES).join(', ')}, got ${JSON.stringify(o.suite)}`);
    matrix = suite;
  } else {
    const ws = o.workload === 'all' ? [...WORKLOADS] : list(o.workload);
    for (const w of ws) if (!(WORKLOADS as readonly string[]).includes(w)) throw new UsageError(`--workload: unknown workload ${JSON.stringify(w)} (one of ${WORKLOADS.join(', ')}, all)`);
    const cs = list(o.clients).map((c) => {
      try {
        return intArg('--clients', 1, 4096)(c);
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
    });
    if (cs.length === 0) throw new UsageError('--clients: expected at least one count');
    matrix = ws.flatMap((workload) => cs.map((clients) => ({ workload: workload as WorkloadName, clients })));
  }
  if (o.compare !== undefined && o.compare !== 'etcd') throw new UsageError(`--compare: only "etcd" is supported, got ${JSON.stringify(o.compare)}`);
  if (o.etcdEndpoints && o.compare !== 'etcd') throw new UsageError('--etcd-endpoints needs --compare etcd');
  if (o.scale !== undefined && (o.endpoints || o.compare)) throw new UsageError('--scale needs the local cluster: no --endpoints or --compare');
  if (o.duration === 0) throw new UsageError('--duration must be positive');
  if (o.trace) {
    if (o.endpoints || o.compare || o.scale !== undefined) throw new UsageError('--trace needs the local cluster: no --endpoints, --compare or --scale');
    if (o.suite !== undefined || o.workload !== 'uncontended' || o.clients !== '16') throw new UsageError('--trace runs uncontended at C=1 only: no --suite, --workload or --clients');
    matrix = [{ workload: 'uncontended', clients: 1 }];
  }
  return {
    matrix,
    durationMs: o.duration,
    warmupMs: o.warmup,
    reps: o.reps,
    sessions: o.sessions,
    endpoints: o.endpoints ?? null,
    compare: o.compare === 'etcd' ? 'etcd' : null,
    etcdEndpoints: o.etcdEndpoints ?? null,
    json: o.json,
    nodeArgs: o.nodeArgs.split(/\s+/).filter(Boolean),
    keep: o.keep,
    progress: o.progress,
    scale: o.scale ?? null,
    snapshotEvery: o.snapshotEvery,
    trace: o.trace,
  };
}
