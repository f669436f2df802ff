// `npm run jepsen -- --nodes 3|5 --duration 60s --seed N --faults partition,kill,pause,…`
// Exit code 0: the run is valid; 1: a checker found a violation (the summary says which);
// 2: bad arguments.
import { Command, InvalidArgumentError } from 'commander';
import { parseDurationMs } from '../../src/config.js';
import { FAULT_CATEGORIES, FAULT_VARIANTS, categoryOf, defaultFaults, type FaultCategory, type Variant } from './nemesis.js';
import { defaultOptions, runJepsen, summaryText } from './run.js';
import { recheck } from './recheck.js';
import { defaultClients, parseWorkloads, WORKLOADS, type Workload } from './workloads.js';

function duration(v: string): number {
  const ms = parseDurationMs(/^\d+$/.test(v) ? `${v}s` : v);
  if (typeof ms === 'string') throw new InvalidArgumentError(ms);
  return ms;
}

function int(v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError(`expected a whole number, got "${v}"`);
  return n;
}

function faults(v: string): FaultCategory[] {
  if (v === 'all') return [...FAULT_CATEGORIES];
  if (v === 'none') return [];
  const out: FaultCategory[] = [];
  for (const f of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!(FAULT_CATEGORIES as readonly string[]).includes(f)) throw new InvalidArgumentError(`unknown fault "${f}" (known: ${FAULT_CATEGORIES.join(', ')}, all, none)`);
    out.push(f as FaultCategory);
  }
  return out;
}

function workloads(v: string): Workload[] {
  const w = parseWorkloads(v);
  if (typeof w === 'string') throw new InvalidArgumentError(w);
  return w;
}

function variants(v: string): Variant[] {
  const out: Variant[] = [];
  for (const f of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!(FAULT_VARIANTS as readonly string[]).includes(f)) throw new InvalidArgumentError(`unknown fault variant "${f}" (known: ${FAULT_VARIANTS.join(', ')})`);
    out.push(f as Variant);
  }
  return out;
}

const program = new Command()
  .name('jepsen-lite')
  .description('real raftlock processes under real faults, with checked histories (see docs/jepsen-lite.md)')
  .option('--nodes <n>', 'cluster size (3 or 5)', int, 3)
  .option('--duration <d>', 'how long the workload runs (60s, 10m, …)', duration, 60_000)
  .option('--seed <n>', 'seed of the fault schedule and the workload (default: random, printed)', int)
  .option('--faults <list>', `comma-separated: ${FAULT_CATEGORIES.join(', ')}, or all / none (default: every kind)`, faults)
  .option('--emphasise <variants>', 'fault variants to schedule once more in every round, e.g. kill-all (normally once per run); their category must be in --faults', variants, [])
  .option('--without <variants>', 'fault variants never to inject, e.g. corrupt-lost-ack', variants, [])
  .option('--workload <list>', `what the clients run, comma-separated, assigned to c1, c2, … in turn (a name twice weights it): ${WORKLOADS.join(', ')}, or all — lock: exclusive locks and the fenced register; shared: readers and writers of a shared lock; semaphore: permits of a semaphore with a fixed limit; election: campaigners of one election whose leader writes the fenced register with its token (some campaigns with max_hold_ms); transfer: money moved between two accounts locked together with acquire-all, every write fenced by each account's token; wait: long holds of one lock and waiters that do not retry (waits must end by their wait_ms)`, workloads, ['lock'])
  .option('--clients <n>', 'client processes (default: nodes + 2, and at least 2 per workload)', int)
  .option('--locks <n>', 'lock names the clients compete for', int, 3)
  .option('--ttl <d>', 'session TTL', duration, 2000)
  .option('--out <dir>', 'where the run folder goes', 'jepsen-runs')
  .option('--no-fencing', 'control run: the resource accepts stale tokens (must show lost updates under client pauses)')
  .option('--no-watch', 'no watch streams (by default one per node, checked against each other and the history)')
  .option('--no-netns', 'run on loopback without network namespaces (partitions and packet faults are skipped)')
  .option('--rss-limit-mb <n>', 'resident memory bound per node', int, 400)
  .option('--recheck <dir>', 'run the history checkers again on an existing run folder, and nothing else')
  .action(async (o: { recheck?: string; nodes: number; duration: number; seed?: number; faults?: FaultCategory[]; emphasise: Variant[]; without: Variant[]; workload: Workload[]; clients?: number; locks: number; ttl: number; out: string; fencing: boolean; netns: boolean; watch: boolean; rssLimitMb: number }) => {
    if (o.recheck !== undefined) {
      const r = recheck(o.recheck);
      process.stdout.write(`recheck ${o.recheck}: ${r.ops} operations, linearizable: ${r.linearizable}, violations: ${r.violations.length}\n${r.violations.map((v) => `  - ${v}\n`).join('')}`);
      process.exitCode = r.violations.length === 0 && r.linearizable === true ? 0 : 1;
      return;
    }
    if (o.nodes !== 3 && o.nodes !== 5) throw new InvalidArgumentError('--nodes must be 3 or 5');
    if (o.duration < 10_000) throw new InvalidArgumentError('--duration must be at least 10s');
    if (o.clients !== undefined && o.clients < 1) throw new InvalidArgumentError('--clients must be at least 1');
    if (o.locks < 1) throw new InvalidArgumentError('--locks must be at least 1');
    o.faults ??= defaultFaults(o.workload);
    const chosen = o.faults;
    for (const v of o.emphasise) if (!chosen.includes(categoryOf(v))) throw new InvalidArgumentError(`--emphasise ${v} needs its category "${categoryOf(v)}" in --faults`);
    const opts = defaultOptions({
      nodes: o.nodes,
      durationMs: o.duration,
      ...(o.seed !== undefined ? { seed: o.seed } : {}),
      faults: o.faults,
      emphasise: o.emphasise,
      without: o.without,
      workloads: o.workload,
      clients: o.clients ?? defaultClients(o.nodes, o.workload),
      locks: o.locks,
      ttlMs: o.ttl,
      outDir: o.out,
      fencing: o.fencing,
      netns: o.netns,
      watch: o.watch,
      rssLimitMb: o.rssLimitMb,
    });
    const s = await runJepsen(opts);
    process.stdout.write(summaryText(s));
    process.exitCode = s.valid ? 0 : 1;
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  // A bad option or run folder is the user's mistake and its message says enough; a
  // RangeError, TypeError or ReferenceError is a bug in the harness or its checkers, and
  // only the stack finds it in a history of half an hour.
  const isBug = err instanceof RangeError || err instanceof TypeError || err instanceof ReferenceError;
  const text = err instanceof Error ? (isBug ? (err.stack ?? err.message) : err.message) : String(err);
  process.stderr.write(`jepsen-lite: ${text}\n`);
  process.exitCode = 2;
});
