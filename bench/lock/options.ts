// Command line of `npm run bench` (see BENCHMARKS.md). Bad input stops with one line.
import { Command, InvalidArgumentError } from 'commander';
import { parseDuration } from '@raftlock/client';
import { WORKLOADS, type WorkloadName } from './workloads.js';

/** Where the clients talk (BENCHMARKS.md "Third round"): `leader` a 3-member cluster's
 *  leader, `follower` one of its followers (every write pays the relay to the leader),
 *  `one` a 1-member cluster (no replication: client hop, apply and one synced save). */
export const TOPOLOGIES = ['leader', 'follower', 'one'] as const;
export type Topology = (typeof TOPOLOGIES)[number];
/** How the clients talk: `raw` the generator's thin HTTP client on one endpoint; `sdk` /
 *  `sdk-no-routing` raftlock's TypeScript SDK given every member, with leader routing on /
 *  off (raftlock only: etcd runs `raw`) */
export const CLIENT_KINDS = ['raw', 'sdk', 'sdk-no-routing'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** one row of the measurement matrix */
export interface MatrixEntry {
  workload: WorkloadName;
  clients: number;
  topology: Topology;
  client: ClientKind;
}

export interface BenchOptions {
  /** rows, in run order (grouped by topology: each topology's clusters start once) */
  matrix: MatrixEntry[];
  durationMs: number;
  warmupMs: number;
  /** once per started deployment, before its first row: unmeasured uncontended C=16 load
   *  (0: none), so no system's first measured rep runs on cold code */
  primeMs: number;
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
  /** with --trace: how many of the slowest measured requests to break down (0: none) */
  slowest: number;
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

/** the third round's rows (BENCHMARKS.md "Third round"): the target table on the leader
 *  against etcd, the C=1 subtraction (one member, three on the leader, three via a
 *  follower, both systems), and the SDK with leader routing on and off */
export const SUITE_ISSUE33: MatrixEntry[] = [
  ...SUITE_ISSUE18.filter((r) => r.workload !== 'keepalive').map((r) => ({ ...r, topology: 'leader' as const, client: 'raw' as const })),
  { workload: 'uncontended', clients: 1, topology: 'one', client: 'raw' },
  { workload: 'uncontended', clients: 1, topology: 'follower', client: 'raw' },
  { workload: 'uncontended', clients: 1, topology: 'leader', client: 'sdk' },
  { workload: 'uncontended', clients: 1, topology: 'leader', client: 'sdk-no-routing' },
  { workload: 'uncontended', clients: 16, topology: 'leader', client: 'sdk' },
  { workload: 'uncontended', clients: 16, topology: 'leader', client: 'sdk-no-routing' },
];

const onLeaderRaw = (rows: { workload: WorkloadName; clients: number }[]): MatrixEntry[] => rows.map((r) => ({ ...r, topology: 'leader', client: 'raw' }));
const SUITES: Record<string, MatrixEntry[]> = { issue8: onLeaderRaw(SUITE_ISSUE8), issue18: onLeaderRaw(SUITE_ISSUE18), modes: onLeaderRaw(SUITE_MODES), issue33: SUITE_ISSUE33 };

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
    .option('--suite <name>', 'a predefined matrix: issue8 (every row of the issue\'s targets), issue18 (uncontended C=1/16/64, contended C=16/64, churn C=16, keepalive C=64), issue33 (issue18\'s rows but keepalive, the C=1 subtraction over --topology one,leader,follower, the SDK with leader routing on and off), modes (contended, shared and semaphore at C=16)')
    .option('--topology <list>', `comma-separated: ${TOPOLOGIES.join(', ')} (leader: 3 members, clients on the leader; follower: on a follower; one: a 1-member cluster)`, 'leader')
    .option('--client <list>', `comma-separated: ${CLIENT_KINDS.join(', ')} (sdk: raftlock's TypeScript SDK given every member, leader routing on; sdk-no-routing: off; raftlock only)`, 'raw')
    .option('-d, --duration <dur>', 'measured time per run', durationArg('--duration'), 10_000)
    .option('--warmup <dur>', 'unmeasured time before each run', durationArg('--warmup'), 2_000)
    .option('--prime <dur>', 'unmeasured uncontended C=16 load on each started cluster before its first row (0: none); Node compiles its hot code only after thousands of calls, so without it the first rep measures the JIT, not the service', durationArg('--prime'), 5_000)
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
    .option('--trace', 'per-step trace on the local cluster: uncontended C=1 acquires step by step (client → leader → follower save → ack → commit → apply → answer, with event-loop turns per step), and for any -w/-c the slowest requests with what they overlapped (GC, saves, ticks, compactions)', false)
    .option('--slowest <n>', 'with --trace: break down the N slowest requests', intArg('--slowest', 0, 1000), 20)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  cmd.parse(argv, { from: 'user' });
  const o = cmd.opts<{
    workload: string; clients: string; suite?: string; duration: number; warmup: number; prime: number; reps: number; sessions: number;
    endpoints?: string[]; compare?: string; etcdEndpoints?: string[]; json: boolean; nodeArgs: string; keep: boolean; progress: boolean; scale?: number; snapshotEvery: number; trace: boolean;
    topology: string; client: string; slowest: number;
  }>();
  const topologies = listOf('--topology', o.topology, TOPOLOGIES);
  const clientKinds = listOf('--client', o.client, CLIENT_KINDS);

  let matrix: BenchOptions['matrix'];
  if (o.suite !== undefined) {
    const suite = SUITES[o.suite];
    if (suite === undefined) throw new UsageError(`--suite: one of ${Object.keys(SUITES).join(', ')}, got ${JSON.stringify(o.suite)}`);
    if (o.topology !== 'leader' || o.client !== 'raw') throw new UsageError('--suite sets its own topologies and clients: no --topology or --client with it');
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
    matrix = topologies.flatMap((topology) => ws.flatMap((workload) => cs.flatMap((clients) => clientKinds.map((client) => ({ workload: workload as WorkloadName, clients, topology, client })))));
  }
  if (o.endpoints && matrix.some((m) => m.topology === 'one')) throw new UsageError('--topology one needs the local clusters (it starts a 1-member cluster): no --endpoints');
  if (o.compare !== undefined && o.compare !== 'etcd') throw new UsageError(`--compare: only "etcd" is supported, got ${JSON.stringify(o.compare)}`);
  if (o.etcdEndpoints && o.compare !== 'etcd') throw new UsageError('--etcd-endpoints needs --compare etcd');
  if (o.scale !== undefined && (o.endpoints || o.compare)) throw new UsageError('--scale needs the local cluster: no --endpoints or --compare');
  if (o.duration === 0) throw new UsageError('--duration must be positive');
  if (o.trace) {
    if (o.endpoints || o.compare || o.scale !== undefined || o.suite !== undefined) throw new UsageError('--trace needs the local cluster: no --endpoints, --compare, --scale or --suite');
    if (matrix.length !== 1) throw new UsageError('--trace traces one row: one workload, one client count, one topology, one client');
    // without -w/-c: the per-step trace of uncontended C=1
    if (o.workload === 'uncontended' && o.clients === '16') matrix = [{ ...matrix[0]!, clients: 1 }];
  }
  return {
    matrix,
    durationMs: o.duration,
    warmupMs: o.warmup,
    primeMs: o.prime,
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
    slowest: o.slowest,
  };
}

function listOf<T extends string>(flag: string, v: string, allowed: readonly T[]): T[] {
  const out = list(v);
  for (const x of out) if (!(allowed as readonly string[]).includes(x)) throw new UsageError(`${flag}: unknown value ${JSON.stringify(x)} (one of ${allowed.join(', ')})`);
  if (out.length === 0) throw new UsageError(`${flag}: expected at least one value`);
  return out as T[];
}
