// `npm run bench`: the lock-service load generator (BENCHMARKS.md has the
// commands and the numbers). It starts (or attaches to) a raftlock cluster and, with
// --compare etcd, a 3-member etcd; runs every (workload, clients) row --reps times,
// alternating raftlock and etcd run by run (A B, B A, …) so slow drifts in the machine's
// load hit both alike; and prints medians, ratios and the Raft cost per operation read
// from each leader's /metrics.
import { cpus, loadavg, totalmem } from 'node:os';
import { CommanderError } from 'commander';
import cliProgress from 'cli-progress';
import { parseOptions, UsageError, type BenchOptions, type MatrixEntry, type Topology } from './options.js';
import { externalRaftlock, startLocalRaftlock } from './raftlock-target.js';
import { etcdVersion, externalEtcd, startLocalEtcd } from './etcd-target.js';
import { runWorkload, supports, type Busy, type RunResult, type RunSpec } from './workloads.js';
import { compare, comparisonTable, raftlockOnlyNote, resultsTable, subtractionTable, summarize } from './report.js';
import type { Deployment, LockTarget } from './target.js';
import { SdkTarget } from './sdk-target.js';
import { runScale, scaleTable } from './scale.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyseTrace, slowestTable, traceTable } from './trace.js';

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function machine(): Record<string, string | number> {
  const c = cpus();
  return {
    cpu: c[0]?.model ?? 'unknown',
    cores: c.length,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    etcd: etcdVersion() ?? 'not on PATH',
  };
}

/** members of the clusters a topology runs on */
const membersOf = (t: Topology): number => (t === 'one' ? 1 : 3);

async function deployments(o: BenchOptions, traceDir: string | null, members: number): Promise<Deployment[]> {
  const out: Deployment[] = [];
  try {
    const env: Record<string, string> = traceDir !== null ? { RAFTLOCK_TRACE_DIR: traceDir } : {};
    out.push(o.endpoints ? externalRaftlock(o.endpoints) : await startLocalRaftlock({ nodes: members, nodeArgs: o.nodeArgs, log, keepDir: o.keep, snapshotEvery: o.snapshotEvery, env }));
    log(`raftlock: ${out[0]!.description}`);
    if (o.compare === 'etcd') {
      if (o.etcdEndpoints) out.push(externalEtcd(o.etcdEndpoints));
      else if (!etcdVersion()) log('etcd: no `etcd` binary on the PATH, so the comparison is SKIPPED (Debian: apt-get install etcd-server)');
      else out.push(await startLocalEtcd({ members, log, keepDir: o.keep }));
      if (out[1]) log(`etcd: ${out[1].description}`);
    }
    return out;
  } catch (err) {
    await Promise.all(out.map((d) => d.stop()));
    throw err;
  }
}

/** "busy: leader 77%, followers 28% 28%, generator 27%" (% of one core over the window) */
function busyText(b: Busy | null): string {
  if (!b) return 'busy -';
  const p = (x: number): string => `${Math.round(x * 100)}%`;
  return `busy: leader ${p(b.leader)}, followers ${b.followers.map(p).join(' ')}, generator ${p(b.generator)}`;
}

/** the clients' target for a matrix entry, and one on the leader for the counters (the
 *  same object when the clients use a raw connection to the leader) */
async function targetsFor(d: Deployment, e: MatrixEntry): Promise<{ target: LockTarget; leader: LockTarget }> {
  const leader = await d.leader();
  if (e.client !== 'raw') {
    // the SDK gets every member, as an application would; it finds the leader itself (or not)
    return { target: new SdkTarget(leader, d.endpoints, e.client === 'sdk'), leader: d.target(leader, 1) };
  }
  if (e.topology === 'follower') return { target: d.target(await d.follower(), e.clients), leader: d.target(leader, 1) };
  const target = d.target(leader, e.clients);
  return { target, leader: target };
}

async function runOne(d: Deployment, e: MatrixEntry, spec: RunSpec, label: string, bar: cliProgress.SingleBar | null): Promise<RunResult> {
  const { target, leader } = await targetsFor(d, e);
  bar?.start(1000, 0, { label, ops: 0 });
  try {
    const load0 = loadavg()[0]!;
    const r = { ...(await runWorkload(target, spec, (fraction, ops) => bar?.update(Math.round(fraction * 1000), { label, ops }), () => d.cpuSeconds(), leader)), topology: e.topology, client: e.client };
    bar?.stop();
    const lat = r.latency.totalCount > 0 ? `p50 ${(r.latency.getValueAtPercentile(50) / 1000).toFixed(1)} ms, p99 ${(r.latency.getValueAtPercentile(99) / 1000).toFixed(1)} ms` : 'no samples';
    const errs = Object.entries(r.errors).map(([k, v]) => `${v}× ${k}`).join('; ');
    log(`${label}: ${Math.round(r.opsPerSec)} ops/s, ${lat}, entries/op ${r.entriesPerOp?.toFixed(2) ?? '-'}, fsyncs/op ${r.fsyncsPerOp?.toFixed(2) ?? '-'}, sync ${r.syncMs?.toFixed(2) ?? '-'} ms, peer msgs/op ${r.peerMsgsPerOp?.toFixed(2) ?? '-'}, cluster CPU ${r.cpuMsPerOp?.toFixed(2) ?? '-'} ms/op, ${busyText(r.busy)}, load ${load0.toFixed(1)}→${loadavg()[0]!.toFixed(1)}${errs ? `, errors: ${errs}` : ''}`);
    return r;
  } finally {
    bar?.stop();
    await target.close();
    if (leader !== target) await leader.close();
  }
}

/** Unmeasured load on a freshly started deployment (BenchOptions.primeMs). A Node process
 *  runs its hot paths in the interpreter until V8 has seen them thousands of times: on a
 *  2-core VM raftlock's first 1 s-warm-up rep of C=1 ran 110 cycles/s against 216 in its
 *  third (BENCHMARKS.md "Eighth round"). A lock service runs for days, so a cold rep
 *  measures start-up, not the service; etcd is primed the same way. */
async function prime(d: Deployment, ms: number, runId: string): Promise<void> {
  const e: MatrixEntry = { workload: 'uncontended', clients: 16, topology: 'leader', client: 'raw' };
  await runOne(d, e, { workload: e.workload, clients: e.clients, durationMs: ms, warmupMs: 0, sessions: 0, runId }, `${d.system} priming (unmeasured) uncontended C=16`, null);
}

async function main(): Promise<number> {
  let o: BenchOptions;
  try {
    o = parseOptions(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError) {
      log(`bench: ${err.message}`);
      return 2;
    }
    // commander has printed its own message (or the help)
    if (err instanceof CommanderError) return err.exitCode;
    throw err;
  }
  const m = machine();
  log(`machine: ${m.cpu}, ${m.cores} cores, ${m.memGiB} GiB, node ${m.node}, ${m.etcd}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  if (o.scale !== null) return scaleMain(o, o.scale);
  const traceDir = o.trace ? mkdtempSync(join(tmpdir(), 'raftlock-trace-')) : null;
  const samples: { t0: number; t1: number }[] = [];
  const runs: RunResult[] = [];
  const bar = o.progress && process.stderr.isTTY
    ? new cliProgress.SingleBar({ format: '{label} [{bar}] {percentage}% | {ops} ops', stream: process.stderr, clearOnComplete: true, hideCursor: true }, cliProgress.Presets.shades_classic)
    : null;
  let seq = 0;
  let compared = false;
  // each cluster size starts its clusters once: the leader and follower topologies share theirs
  const sizes = [...new Set(o.matrix.map((e) => membersOf(e.topology)))];
  for (const size of sizes) {
    const ds = await deployments(o, traceDir, size);
    compared ||= ds.length > 1;
    try {
      if (o.primeMs > 0) for (const d of ds) await prime(d, o.primeMs, `b${process.pid}-${++seq}`);
      for (const e of o.matrix.filter((x) => membersOf(x.topology) === size)) {
        const { workload, clients } = e;
        for (let rep = 0; rep < o.reps; rep++) {
          // A/B, then B/A: neither system always runs first (after the other's load)
          const order = (rep % 2 === 0 ? ds : [...ds].reverse()).filter((d) => {
            const ok = supports(d.hasModes, workload) && (e.client === 'raw' || d.system === 'raftlock');
            if (!ok && rep === 0) log(`${d.system} ${workload} C=${clients} ${e.client}: skipped, ${e.client !== 'raw' ? `the ${e.client} client is raftlock's` : `${d.system} has no shared lock or semaphore primitive`} (raftlock-only row)`);
            return ok;
          });
          for (const d of order) {
            const spec: RunSpec = { workload, clients, durationMs: o.durationMs, warmupMs: o.warmupMs, sessions: o.sessions, runId: `b${process.pid}-${++seq}`, ...(o.trace ? { samples } : {}) };
            const variant = e.topology === 'leader' && e.client === 'raw' ? '' : ` [${e.topology}${e.client === 'raw' ? '' : `, ${e.client}`}]`;
            runs.push(await runOne(d, e, spec, `${d.system} ${workload} C=${clients}${variant} rep ${rep + 1}/${o.reps}`, bar));
          }
        }
      }
    } finally {
      await Promise.all(ds.map((d) => d.stop()));
    }
  }
  if (traceDir !== null) {
    // performance.now() ms here → the nodes' monotonic µs (both clocks are CLOCK_MONOTONIC)
    const hrOffsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
    const r = analyseTrace(traceDir, samples, hrOffsetUs, o.slowest);
    if (o.keep) {
      // the generator's side too, so the trace can be analysed again (bench/lock/trace.ts)
      writeFileSync(join(traceDir, 'samples.json'), JSON.stringify({ hrOffsetUs, samples }));
      log(`trace files kept in ${traceDir}`);
    }
    else rmSync(traceDir, { recursive: true, force: true });
    const e = o.matrix[0]!;
    if (e.workload === 'uncontended' && e.clients === 1) process.stdout.write(`\n${traceTable(r)}\n`);
    if (o.slowest > 0) process.stdout.write(`\n${slowestTable(r, `${e.workload} C=${e.clients}`)}\n`);
    if (o.json) process.stdout.write(`${JSON.stringify({ machine: m, trace: r }, null, 2)}\n`);
    return r.acquires > 0 ? 0 : 1;
  }
  const rows = summarize(runs);
  const comparisons = compare(rows);
  const out = o.json ? log : (s: string) => process.stdout.write(`${s}\n`);
  out('');
  out(`Results (median of ${o.reps} run${o.reps > 1 ? 's' : ''} per row, ${o.durationMs / 1000} s measured after ${o.warmupMs / 1000} s warm-up; latencies in ms; entries and fsyncs per op from the leader's /metrics):`);
  out(resultsTable(rows));
  const note = raftlockOnlyNote(rows, compared);
  if (note) out(note);
  const sub = subtractionTable(rows);
  if (sub) {
    out('');
    out('Uncontended C=1 by subtraction (p50 ms of the acquire and of the release, each one commit; CPU of all members per cycle):');
    out(sub);
  }
  if (comparisons.length > 0) {
    out('');
    out('raftlock vs etcd (ratio of median throughputs; targets: BENCHMARKS.md "Results"):');
    out(comparisonTable(comparisons));
  }
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ machine: m, options: { ...o, matrix: o.matrix }, rows, comparisons, ...(note ? { note } : {}) }, null, 2)}\n`);
  }
  return 0;
}

async function scaleMain(o: BenchOptions, n: number): Promise<number> {
  const d = await startLocalRaftlock({ nodes: 3, nodeArgs: o.nodeArgs, log, keepDir: o.keep, snapshotEvery: o.snapshotEvery });
  log(`raftlock: ${d.description}`);
  try {
    const r = await runScale(d, n, o.matrix[0]?.clients ?? 64, log);
    const out = o.json ? log : (s: string) => process.stdout.write(`${s}\n`);
    out(scaleTable(r));
    if (o.json) process.stdout.write(`${JSON.stringify({ machine: machine(), scale: r }, null, 2)}\n`);
    return 0;
  } finally {
    await d.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`bench: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
