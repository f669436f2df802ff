// Turning runs into numbers people compare: one row per (workload, clients, system) with
// the MEDIAN over repetitions of each statistic, a side-by-side table with ratios and the
// issue-8 targets, and a JSON form for machines.
import { MODE_WORKLOADS, SEMAPHORE_LIMIT, SHARED_LOCKS, WRITE_EVERY, type RunResult, type WorkloadName } from './workloads.js';
import type { SystemName } from './target.js';
import type { ClientKind, Topology } from './options.js';

export interface Row {
  workload: WorkloadName;
  clients: number;
  system: SystemName;
  topology: Topology;
  client: ClientKind;
  reps: number;
  /** per repetition, in run order */
  opsPerSecRuns: number[];
  opsPerSec: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** uncontended: p50 of the cycles' releases (each one commit, like the acquire) */
  releaseP50Ms: number | null;
  entriesPerOp: number | null;
  fsyncsPerOp: number | null;
  syncMs: number | null;
  peerMsgsPerOp: number | null;
  cpuMsPerOp: number | null;
  /** cores busy over the window (medians): the leader, the mean of the other members, the
   *  load generator; null where the counters could not be read */
  leaderBusy: number | null;
  followerBusy: number | null;
  generatorBusy: number | null;
  /** the leader's CPU per operation, µs (median over repetitions of its busy share of the
   *  window ÷ the operations per second): issue 18's CPU row, stable where throughput is
   *  noisy */
  leaderCpuUsPerOp: number | null;
  errors: Record<string, number>;
}

/** raftlock ÷ etcd throughput required per (workload, clients): the third round's targets
 *  (BENCHMARKS.md "Third round (issue 33)"), which replace the second round's (issue 18's
 *  contended targets asked for less than one commit per hand-off, and were withdrawn) */
export const TARGET_RATIOS: Record<string, number> = {
  'uncontended/1': 1.1,
  'uncontended/16': 1.5,
  'uncontended/64': 1.5,
  'contended/16': 2,
  'contended/64': 1.5,
  'churn/16': 1.6,
};

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 === 1 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}

function medianOrNull(xs: (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null);
  return v.length === 0 ? null : median(v);
}

export function summarize(runs: RunResult[]): Row[] {
  const groups = new Map<string, RunResult[]>();
  for (const r of runs) {
    const k = `${r.workload}/${r.clients}/${r.system}/${r.topology}/${r.client}`;
    const g = groups.get(k) ?? [];
    g.push(r);
    groups.set(k, g);
  }
  const rows: Row[] = [];
  for (const g of groups.values()) {
    const first = g[0]!;
    const errors: Record<string, number> = {};
    for (const r of g) for (const [k, v] of Object.entries(r.errors)) errors[k] = (errors[k] ?? 0) + v;
    const pct = (p: number): number => median(g.map((r) => (r.latency.totalCount > 0 ? r.latency.getValueAtPercentile(p) / 1000 : NaN)));
    rows.push({
      workload: first.workload,
      clients: first.clients,
      system: first.system,
      topology: first.topology,
      client: first.client,
      reps: g.length,
      opsPerSecRuns: g.map((r) => r.opsPerSec),
      opsPerSec: median(g.map((r) => r.opsPerSec)),
      p50Ms: pct(50),
      p90Ms: pct(90),
      p99Ms: pct(99),
      maxMs: median(g.map((r) => (r.latency.totalCount > 0 ? r.latency.maxValue / 1000 : NaN))),
      releaseP50Ms: medianOrNull(g.map((r) => (r.releaseLatency && r.releaseLatency.totalCount > 0 ? r.releaseLatency.getValueAtPercentile(50) / 1000 : null))),
      entriesPerOp: medianOrNull(g.map((r) => r.entriesPerOp)),
      fsyncsPerOp: medianOrNull(g.map((r) => r.fsyncsPerOp)),
      syncMs: medianOrNull(g.map((r) => r.syncMs)),
      peerMsgsPerOp: medianOrNull(g.map((r) => r.peerMsgsPerOp)),
      cpuMsPerOp: medianOrNull(g.map((r) => r.cpuMsPerOp)),
      leaderBusy: medianOrNull(g.map((r) => r.busy?.leader ?? null)),
      followerBusy: medianOrNull(g.map((r) => (r.busy && r.busy.followers.length > 0 ? r.busy.followers.reduce((a, b) => a + b, 0) / r.busy.followers.length : null))),
      generatorBusy: medianOrNull(g.map((r) => r.busy?.generator ?? null)),
      leaderCpuUsPerOp: medianOrNull(g.map((r) => (r.busy && r.opsPerSec > 0 ? (r.busy.leader / r.opsPerSec) * 1e6 : null))),
      errors,
    });
  }
  return rows;
}

const UNIT: Record<WorkloadName, string> = { uncontended: 'cycles/s', contended: 'grants/s', churn: 'cycles/s', keepalive: 'keepalives/s', read: 'reads/s', shared: 'grants/s', semaphore: 'grants/s' };
const LAT: Record<WorkloadName, string> = { uncontended: 'acquire', contended: 'acquire (wait)', churn: 'acquire', keepalive: 'keepalive', read: 'read', shared: 'acquire (wait)', semaphore: 'acquire (wait)' };

/** The line under the tables for rows only raftlock can run (no ratio is made up), or null. */
export function raftlockOnlyNote(rows: Row[], compared: boolean): string | null {
  const only = [...new Set(rows.filter((r) => MODE_WORKLOADS.has(r.workload)).map((r) => r.workload))];
  if (only.length === 0) return null;
  const shape = `${only.join(' and ')}: raftlock only${compared ? ' (no etcd row and no ratio)' : ''}: etcd has no shared lock or semaphore primitive, only client-side recipes on plain locks`;
  const mix = only.includes('shared') ? `; shared = readers and writers ${WRITE_EVERY - 1}:1 on ${SHARED_LOCKS} locks` : '';
  const sem = only.includes('semaphore') ? `; semaphore = every client on one semaphore of limit ${SEMAPHORE_LIMIT}` : '';
  return `${shape}${mix}${sem}. Compare them with the exclusive contended row.`;
}

const f0 = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-');
const fms = (x: number): string => (!Number.isFinite(x) ? '-' : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : Math.round(x).toString());
const f2 = (x: number | null): string => (x === null || !Number.isFinite(x) ? '-' : x.toFixed(2));
const pct = (x: number | null): string => (x === null || !Number.isFinite(x) ? '-' : `${Math.round(x * 100)}%`);
/** leader / follower / generator busy, as % of one core */
export const busyCell = (r: Pick<Row, 'leaderBusy' | 'followerBusy' | 'generatorBusy'>): string =>
  r.leaderBusy === null && r.followerBusy === null && r.generatorBusy === null ? '-' : `${pct(r.leaderBusy)} / ${pct(r.followerBusy)} / ${pct(r.generatorBusy)}`;

function table(header: string[], body: string[][], rightAlign: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => '| ' + cells.map((c, i) => (rightAlign[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ') + ' |';
  const sep = '|' + widths.map((w, i) => (rightAlign[i] ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|') + '|';
  return [line(header), sep, ...body.map(line)].join('\n');
}

/** does any row run elsewhere than a raw client on a 3-member cluster's leader? */
const variants = (rows: Row[]): boolean => rows.some((r) => r.topology !== 'leader' || r.client !== 'raw');

export function resultsTable(rows: Row[]): string {
  const v = variants(rows);
  const body = rows.map((r) => [
    r.workload, String(r.clients), r.system, ...(v ? [r.topology, r.client] : []), `${f0(r.opsPerSec)} ${UNIT[r.workload]}`, r.reps > 1 ? r.opsPerSecRuns.map(f0).join(' / ') : '',
    LAT[r.workload], fms(r.p50Ms), fms(r.p90Ms), fms(r.p99Ms), fms(r.maxMs), f2(r.entriesPerOp), f2(r.fsyncsPerOp), f2(r.syncMs), f2(r.peerMsgsPerOp), f2(r.cpuMsPerOp), f0(r.leaderCpuUsPerOp ?? NaN), busyCell(r),
    Object.entries(r.errors).map(([k, v]) => `${v}× ${k}`).join('; ') || '0',
  ]);
  return table(
    ['workload', 'C', 'system', ...(v ? ['topology', 'client'] : []), 'throughput (median)', 'per rep', 'latency of', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'entries/op', 'fsyncs/op', 'sync ms', 'peer msgs/op', 'CPU ms/op', 'leader CPU µs/op', 'busy: leader / follower / generator', 'errors'],
    body,
    [false, true, false, ...(v ? [false, false] : []), true, true, false, true, true, true, true, true, true, true, true, true, true, true, false],
  );
}

export interface Comparison {
  workload: WorkloadName;
  clients: number;
  raftlock: number;
  etcd: number;
  ratio: number;
  target: number | null;
  raftlockP99Ms: number;
  etcdP99Ms: number;
  throughputMet: boolean | null;
  p99Met: boolean;
}

export function compare(rows: Row[]): Comparison[] {
  const out: Comparison[] = [];
  for (const a of rows) {
    // the issue's targets compare both systems' raw clients on a 3-member cluster's leader
    if (a.system !== 'raftlock' || a.topology !== 'leader' || a.client !== 'raw') continue;
    const b = rows.find((r) => r.system === 'etcd' && r.workload === a.workload && r.clients === a.clients && r.topology === 'leader' && r.client === 'raw');
    if (!b) continue;
    const target = TARGET_RATIOS[`${a.workload}/${a.clients}`] ?? null;
    const ratio = a.opsPerSec / b.opsPerSec;
    out.push({
      workload: a.workload, clients: a.clients, raftlock: a.opsPerSec, etcd: b.opsPerSec, ratio, target,
      raftlockP99Ms: a.p99Ms, etcdP99Ms: b.p99Ms,
      throughputMet: target === null ? null : ratio >= target,
      p99Met: a.p99Ms <= b.p99Ms,
    });
  }
  return out;
}

export function comparisonTable(cs: Comparison[]): string {
  const body = cs.map((c) => [
    c.workload, String(c.clients), f0(c.raftlock), f0(c.etcd), `${c.ratio.toFixed(2)}×`,
    c.target === null ? '-' : `≥ ${c.target}× ${c.throughputMet ? 'met' : 'NOT met'}`,
    fms(c.raftlockP99Ms), fms(c.etcdP99Ms), c.p99Met ? 'met' : 'NOT met',
  ]);
  return table(['workload', 'C', 'raftlock ops/s', 'etcd ops/s', 'ratio', 'target', 'raftlock p99 ms', 'etcd p99 ms', 'p99 ≤ etcd'], body, [false, true, true, true, true, false, true, true, false]);
}

/**
 * Uncontended C=1 by subtraction (BENCHMARKS.md "Third round"): per system, the p50 of the
 * acquire and of the release on one member, on a 3-member cluster's leader and via one of
 * its followers; the differences are what replication and a follower's relay add, and the
 * last rows what raftlock pays over etcd at each. Null unless two topologies ran.
 */
export function subtractionTable(rows: Row[]): string | null {
  const at = (system: SystemName, t: Topology): Row | undefined => rows.find((r) => r.workload === 'uncontended' && r.clients === 1 && r.client === 'raw' && r.system === system && r.topology === t);
  const systems = (['raftlock', 'etcd'] as const).filter((s) => at(s, 'one') || at(s, 'follower'));
  if (systems.length === 0 || !systems.some((s) => at(s, 'leader'))) return null;
  const d = (a: number | null | undefined, b: number | null | undefined): string => (a == null || b == null || !Number.isFinite(a) || !Number.isFinite(b) ? '-' : `${a - b >= 0 ? '+' : ''}${(a - b).toFixed(2)}`);
  const cell = (x: number | null | undefined): string => (x == null ? '-' : fms(x));
  const body: string[][] = [];
  for (const s of systems) {
    const [one, lead, fol] = [at(s, 'one'), at(s, 'leader'), at(s, 'follower')];
    body.push([s, 'acquire p50', cell(one?.p50Ms), cell(lead?.p50Ms), cell(fol?.p50Ms), d(lead?.p50Ms, one?.p50Ms), d(fol?.p50Ms, lead?.p50Ms)]);
    body.push([s, 'release p50', cell(one?.releaseP50Ms), cell(lead?.releaseP50Ms), cell(fol?.releaseP50Ms), d(lead?.releaseP50Ms, one?.releaseP50Ms), d(fol?.releaseP50Ms, lead?.releaseP50Ms)]);
    body.push([s, 'CPU ms/cycle', f2(one?.cpuMsPerOp ?? null), f2(lead?.cpuMsPerOp ?? null), f2(fol?.cpuMsPerOp ?? null), d(lead?.cpuMsPerOp, one?.cpuMsPerOp), d(fol?.cpuMsPerOp, lead?.cpuMsPerOp)]);
  }
  if (systems.length === 2) {
    const r = (t: Topology) => at('raftlock', t);
    const e = (t: Topology) => at('etcd', t);
    body.push(['raftlock − etcd', 'acquire p50', d(r('one')?.p50Ms, e('one')?.p50Ms), d(r('leader')?.p50Ms, e('leader')?.p50Ms), d(r('follower')?.p50Ms, e('follower')?.p50Ms), '', '']);
    body.push(['raftlock − etcd', 'release p50', d(r('one')?.releaseP50Ms, e('one')?.releaseP50Ms), d(r('leader')?.releaseP50Ms, e('leader')?.releaseP50Ms), d(r('follower')?.releaseP50Ms, e('follower')?.releaseP50Ms), '', '']);
  }
  return table(['system', 'what', 'one member', '3, on the leader', '3, via a follower', 'replication (leader − one)', 'relay (follower − leader)'], body, [false, false, true, true, true, true, true]);
}

export function rowsJson(rows: Row[]): object[] {
  return rows.map((r) => ({ ...r }));
}
