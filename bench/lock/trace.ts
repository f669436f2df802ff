// `npm run bench -- --trace`: where the time of one uncontended acquire goes, step by step
// (BENCHMARKS.md "Per-step trace"). The nodes run with RAFTLOCK_TRACE_DIR (src/raft/trace.ts
// writes their steps, on the machine-wide monotonic clock); the generator keeps the start
// and end of every measured acquire on the same clock. With one client there is one
// request in flight, so each acquire's window holds exactly one proposal: its log index
// names the rest of its steps on every node.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Event {
  step: string;
  node: string;
  index: number;
  peer: string;
  us: number;
  /** the process's event-loop iteration count at the step */
  loop: number;
  /** the step's own figure (µs of a GC pause, entries of a save, events of a loop sample) */
  value: number;
  /** the trace file (one per process) */
  file: string;
}

/** the steps in path order; each row of the table is the time from the previous one */
export const TRACE_STEPS = [
  ['client_send', 'client sends the acquire'],
  ['http_recv', 'leader: HTTP request in'],
  ['propose', 'leader: proposed (entered the core)'],
  ['append_sent', 'leader: append written to the follower stream'],
  ['recv_append', 'follower: append decoded'],
  ['saved', 'follower: synced save done'],
  ['ack_sent', 'follower: ack written'],
  ['ack_recv', 'leader: ack decoded'],
  ['commit', 'leader: commit (Ready carries the entry)'],
  ['apply', 'leader: applied'],
  ['http_answer', 'leader: HTTP answer finished'],
  ['client_recv', 'client has the answer'],
] as const;

/** the steps a one-member cluster has (no follower) */
const SOLO_STEPS = new Set(['client_send', 'http_recv', 'propose', 'commit', 'apply', 'http_answer', 'client_recv']);

export interface TraceRow {
  step: string;
  label: string;
  /** µs from the previous step, over the traced acquires */
  p50: number;
  p99: number;
  /** event-loop turns from the previous step when both ran in one process (0: the same
   *  turn); null across processes */
  turnsP50: number | null;
  turnsMax: number | null;
}

export interface ProcessLoops {
  node: string;
  /** event-loop iterations per measured request over the traced window (each is a return
   *  from epoll: a wake-up, unless the loop had work queued) */
  iterationsPerOp: number;
  /** events the loop handled per measured request */
  eventsPerOp: number;
  /** GC pauses in the window: count and total ms */
  gcCount: number;
  gcMs: number;
}

export interface SlowRequest {
  ms: number;
  /** the step that took longest beyond its own p50, when the request was lined up */
  worstStep: string | null;
  worstExcessMs: number | null;
  /** GC pause time overlapping the request, per node (ms) */
  gc: Record<string, number>;
  /** the longest synced save overlapping the request, per node (ms) */
  longestSave: Record<string, number>;
  ticks: number;
  compactions: number;
}

export interface TraceResult {
  acquires: number;
  matched: number;
  rows: TraceRow[];
  /** propose → the leader's own save done (in parallel with the follower's) */
  leaderSave: { p50: number; p99: number } | null;
  total: { p50: number; p99: number };
  /** turns on the leader from request in to answer out, and on the follower from append in to ack out (p50) */
  leaderTurnsP50: number | null;
  followerTurnsP50: number | null;
  processes: ProcessLoops[];
  slowest: SlowRequest[];
}

function readEvents(dir: string): Event[] {
  const out: Event[] = [];
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.trace')) continue;
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const [step, node, index, peer, us, loop, value] = line.split(' ');
      if (step === undefined || us === undefined) continue;
      out.push({ step, node: node!, index: Number(index), peer: peer!, us: Number(us), loop: Number(loop ?? NaN), value: Number(value ?? 0), file: f });
    }
  }
  return out.sort((a, b) => a.us - b.us);
}

/** each trace file's node id (the one its driver steps name) */
function nodesOfFiles(evs: readonly Event[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of evs) if (e.node !== '-' && !out.has(e.file)) out.set(e.file, e.node);
  return out;
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** first event at or after `from` (sorted `evs`) matching `f`, before `until` */
function first(evs: readonly Event[], from: number, until: number, f: (e: Event) => boolean): Event | undefined {
  let lo = 0;
  let hi = evs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (evs[mid]!.us < from) lo = mid + 1;
    else hi = mid;
  }
  for (let k = lo; k < evs.length && evs[k]!.us <= until; k++) if (f(evs[k]!)) return evs[k];
  return undefined;
}

/**
 * Line the nodes' steps up with the generator's requests. `samples` are performance.now()
 * ms in this process; `hrOffsetUs` turns them into the monotonic µs the nodes wrote. The
 * step-by-step breakdown needs uncontended C=1 (one proposal in each request's window);
 * the loop counts and the slowest requests work for any workload.
 */
export function analyseTrace(dir: string, samples: readonly { t0: number; t1: number }[], hrOffsetUs: number, slowest = 20): TraceResult {
  const evs = readEvents(dir);
  const fileNode = nodesOfFiles(evs);
  const nodeOf = (e: Event): string => (e.node !== '-' ? e.node : fileNode.get(e.file) ?? e.file);
  const deltas = new Map<string, number[]>(TRACE_STEPS.map(([s]) => [s, []]));
  const turns = new Map<string, number[]>(TRACE_STEPS.map(([s]) => [s, []]));
  const leaderTurns: number[] = [];
  const followerTurns: number[] = [];
  const leaderSave: number[] = [];
  const total: number[] = [];
  const perSample: (Record<string, number> | null)[] = [];
  let matched = 0;
  for (const s of samples) {
    perSample.push(null);
    const t0 = s.t0 * 1000 + hrOffsetUs;
    const t1 = s.t1 * 1000 + hrOffsetUs;
    const propose = first(evs, t0, t1, (e) => e.step === 'propose');
    if (!propose) continue;
    const leader = propose.node;
    const idx = propose.index;
    const lfile = propose.file;
    const recv = first(evs, t0, propose.us, (e) => e.step === 'http_recv' && e.file === lfile);
    const commit = first(evs, propose.us, t1, (e) => e.step === 'commit' && e.node === leader && e.index === idx);
    const apply = commit && first(evs, commit.us, t1, (e) => e.step === 'apply' && e.node === leader && e.index === idx);
    const answer = apply && first(evs, apply.us, t1 + 1, (e) => e.step === 'http_answer' && e.file === lfile);
    if (!recv || !commit || !apply || !answer) continue;
    const at: Record<string, Event | number> = { client_send: t0, http_recv: recv, propose, commit, apply, http_answer: answer, client_recv: t1 };
    // the follower whose ack came first is the one the commit waited for (none on one member)
    const ack = first(evs, propose.us, commit.us, (e) => e.step === 'ack_recv' && e.node === leader && e.index >= idx);
    if (ack) {
      const f = ack.peer;
      const sent = first(evs, propose.us, t1, (e) => e.step === 'append_sent' && e.node === leader && e.peer === f && e.index >= idx);
      const got = sent && first(evs, sent.us - 1000, t1, (e) => e.step === 'recv_append' && e.node === f && e.index >= idx);
      const saved = got && first(evs, got.us, t1, (e) => e.step === 'saved' && e.node === f && e.index >= idx);
      const acked = saved && first(evs, saved.us, t1, (e) => e.step === 'ack_sent' && e.node === f && e.index >= idx);
      if (!sent || !got || !saved || !acked) continue;
      Object.assign(at, { append_sent: sent, recv_append: got, saved, ack_sent: acked, ack_recv: ack });
      if (Number.isFinite(acked.loop - got.loop)) followerTurns.push(acked.loop - got.loop);
    }
    const steps = TRACE_STEPS.filter(([st]) => at[st] !== undefined).map(([st]) => st);
    if (!ack && steps.some((st) => !SOLO_STEPS.has(st))) continue;
    matched++;
    const us = (st: string): number => {
      const v = at[st]!;
      return typeof v === 'number' ? v : v.us;
    };
    const rec: Record<string, number> = {};
    for (let k = 1; k < steps.length; k++) {
      const [a, b] = [at[steps[k - 1]!]!, at[steps[k]!]!];
      const d = us(steps[k]!) - us(steps[k - 1]!);
      deltas.get(steps[k]!)!.push(d);
      rec[steps[k]!] = d;
      if (typeof a !== 'number' && typeof b !== 'number' && a.file === b.file && Number.isFinite(b.loop - a.loop)) turns.get(steps[k]!)!.push(b.loop - a.loop);
    }
    perSample[perSample.length - 1] = rec;
    if (Number.isFinite(answer.loop - recv.loop)) leaderTurns.push(answer.loop - recv.loop);
    total.push(t1 - t0);
    const ls = first(evs, propose.us, t1, (e) => e.step === 'leader_saved' && e.node === leader && e.index >= idx);
    if (ls) leaderSave.push(ls.us - propose.us);
  }
  const rows = TRACE_STEPS.slice(1)
    .filter(([step]) => deltas.get(step)!.length > 0)
    .map(([step, label]) => {
      const t = turns.get(step)!;
      return { step, label, p50: pct(deltas.get(step)!, 50), p99: pct(deltas.get(step)!, 99), turnsP50: t.length > 0 ? pct(t, 50) : null, turnsMax: t.length > 0 ? Math.max(...t) : null };
    });
  return {
    acquires: samples.length,
    matched,
    rows,
    leaderSave: leaderSave.length > 0 ? { p50: pct(leaderSave, 50), p99: pct(leaderSave, 99) } : null,
    total: { p50: pct(total, 50), p99: pct(total, 99) },
    leaderTurnsP50: leaderTurns.length > 0 ? pct(leaderTurns, 50) : null,
    followerTurnsP50: followerTurns.length > 0 ? pct(followerTurns, 50) : null,
    processes: processLoops(evs, samples, hrOffsetUs, nodeOf),
    slowest: slowestRequests(evs, samples, hrOffsetUs, slowest, perSample, rows, nodeOf),
  };
}

/** per process: loop iterations, events and GC over the window of the measured requests */
function processLoops(evs: readonly Event[], samples: readonly { t0: number; t1: number }[], hrOffsetUs: number, nodeOf: (e: Event) => string): ProcessLoops[] {
  if (samples.length === 0) return [];
  const from = Math.min(...samples.map((s) => s.t0)) * 1000 + hrOffsetUs;
  const to = Math.max(...samples.map((s) => s.t1)) * 1000 + hrOffsetUs;
  const out: ProcessLoops[] = [];
  for (const file of new Set(evs.map((e) => e.file))) {
    const loops = evs.filter((e) => e.file === file && e.step === 'loop' && e.us >= from && e.us <= to);
    if (loops.length < 2) continue;
    const [a, b] = [loops[0]!, loops.at(-1)!];
    // the share of the requests that fell between the two samples
    const n = samples.filter((s) => s.t0 * 1000 + hrOffsetUs >= a.us && s.t1 * 1000 + hrOffsetUs <= b.us).length;
    if (n === 0) continue;
    const gcs = evs.filter((e) => e.file === file && e.step === 'gc' && e.us >= a.us && e.us <= b.us);
    out.push({
      node: nodeOf(a),
      iterationsPerOp: (b.loop - a.loop) / n,
      eventsPerOp: (b.value - a.value) / n,
      gcCount: gcs.length,
      gcMs: gcs.reduce((x, e) => x + e.value, 0) / 1000,
    });
  }
  return out.sort((x, y) => x.node.localeCompare(y.node));
}

/** the `n` slowest requests, each with the step that ran over and what it overlapped */
function slowestRequests(
  evs: readonly Event[], samples: readonly { t0: number; t1: number }[], hrOffsetUs: number, n: number,
  perSample: readonly (Record<string, number> | null)[], rows: readonly TraceRow[], nodeOf: (e: Event) => string,
): SlowRequest[] {
  const p50 = new Map(rows.map((r) => [r.step, r.p50]));
  const order = samples.map((s, i) => i).sort((a, b) => samples[b]!.t1 - samples[b]!.t0 - (samples[a]!.t1 - samples[a]!.t0)).slice(0, n);
  // saves as intervals: save_start → the next saved/leader_saved of the same process
  const saves: { file: string; node: string; from: number; to: number }[] = [];
  const open = new Map<string, Event>();
  for (const e of evs) {
    if (e.step === 'save_start') open.set(e.file, e);
    else if ((e.step === 'saved' || e.step === 'leader_saved') && open.has(e.file)) {
      const s = open.get(e.file)!;
      open.delete(e.file);
      saves.push({ file: e.file, node: nodeOf(e), from: s.us, to: e.us });
    }
  }
  return order.map((i) => {
    const s = samples[i]!;
    const t0 = s.t0 * 1000 + hrOffsetUs;
    const t1 = s.t1 * 1000 + hrOffsetUs;
    const gc: Record<string, number> = {};
    let ticks = 0;
    let compactions = 0;
    for (let k = lowerBound(evs, t0 - 200_000); k < evs.length && evs[k]!.us <= t1; k++) {
      const e = evs[k]!;
      if (e.step === 'gc') {
        const overlap = Math.min(t1, e.us + e.value) - Math.max(t0, e.us);
        if (overlap > 0) gc[nodeOf(e)] = (gc[nodeOf(e)] ?? 0) + overlap / 1000;
      } else if (e.us >= t0) {
        if (e.step === 'tick') ticks++;
        else if (e.step === 'compact_start') compactions++;
      }
    }
    const longestSave: Record<string, number> = {};
    for (const sv of saves) {
      if (sv.to < t0 || sv.from > t1) continue;
      longestSave[sv.node] = Math.max(longestSave[sv.node] ?? 0, (sv.to - sv.from) / 1000);
    }
    const rec = perSample[i];
    let worstStep: string | null = null;
    let worstExcessMs: number | null = null;
    if (rec) {
      for (const [step, d] of Object.entries(rec)) {
        const excess = (d - (p50.get(step) ?? 0)) / 1000;
        if (worstExcessMs === null || excess > worstExcessMs) [worstStep, worstExcessMs] = [step, excess];
      }
    }
    return { ms: (t1 - t0) / 1000, worstStep, worstExcessMs, gc, longestSave, ticks, compactions };
  });
}

function lowerBound(evs: readonly Event[], us: number): number {
  let lo = 0;
  let hi = evs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (evs[mid]!.us < us) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function traceTable(r: TraceResult): string {
  const ms = (us: number): string => (Number.isNaN(us) ? '-' : (us / 1000).toFixed(3));
  const lines = [
    `Per-step trace of ${r.matched} of ${r.acquires} acquires (uncontended, C=1; ms from the previous step; turns: event-loop iterations between two steps of one process, 0 = the same turn):`,
    '| step | p50 ms | p99 ms | share of p50 sum | turns p50 (max) |',
    '|---|--:|--:|--:|--:|',
  ];
  const sum = r.rows.reduce((a, x) => a + (Number.isNaN(x.p50) ? 0 : x.p50), 0);
  for (const x of r.rows) lines.push(`| ${x.label} | ${ms(x.p50)} | ${ms(x.p99)} | ${sum > 0 ? `${Math.round((100 * x.p50) / sum)}%` : '-'} | ${x.turnsP50 === null ? '-' : `${x.turnsP50} (${x.turnsMax})`} |`);
  lines.push(`| **acquire, client to client** | ${ms(r.total.p50)} | ${ms(r.total.p99)} | | |`);
  if (r.leaderSave) lines.push(`| (leader: propose → own synced save done, in parallel) | ${ms(r.leaderSave.p50)} | ${ms(r.leaderSave.p99)} | | |`);
  lines.push('');
  lines.push(`Turns per acquire (p50): leader, request in → answer out: ${r.leaderTurnsP50 ?? '-'}; follower, append in → ack out: ${r.followerTurnsP50 ?? '-'}.`);
  lines.push(processTable(r));
  return lines.join('\n');
}

function processTable(r: TraceResult): string {
  const lines = ['', 'Per process over the measured window (per measured request; an iteration is one return from epoll):', '| node | loop iterations / op | events / op | GC pauses | GC ms |', '|---|--:|--:|--:|--:|'];
  for (const p of r.processes) lines.push(`| ${p.node} | ${p.iterationsPerOp.toFixed(2)} | ${p.eventsPerOp.toFixed(2)} | ${p.gcCount} | ${p.gcMs.toFixed(1)} |`);
  return lines.join('\n');
}

/** the slowest requests of a run and what each overlapped */
export function slowestTable(r: TraceResult, what: string): string {
  const kv = (o: Record<string, number>): string => Object.entries(o).filter(([, v]) => v >= 0.05).sort().map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ') || '-';
  const lines = [
    `The ${r.slowest.length} slowest of ${r.acquires} requests (${what}): the step that ran longest over its p50 (C=1 only), GC pause ms overlapping it per node, the longest synced save overlapping it per node (ms), ticks and compactions inside it:`,
    '| # | ms | worst step (+ms over p50) | GC ms | longest save ms | ticks | compactions |',
    '|--:|--:|---|---|---|--:|--:|',
  ];
  r.slowest.forEach((s, k) => {
    const step = s.worstStep === null ? '-' : `${TRACE_STEPS.find(([x]) => x === s.worstStep)?.[1] ?? s.worstStep} (+${s.worstExcessMs!.toFixed(2)})`;
    lines.push(`| ${k + 1} | ${s.ms.toFixed(2)} | ${step} | ${kv(s.gc)} | ${kv(s.longestSave)} | ${s.ticks} | ${s.compactions} |`);
  });
  if (r.matched === 0) lines.push(processTable(r));
  return lines.join('\n');
}
