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

export interface TraceRow {
  step: string;
  label: string;
  /** µs from the previous step, over the traced acquires */
  p50: number;
  p99: number;
}

export interface TraceResult {
  acquires: number;
  matched: number;
  rows: TraceRow[];
  /** propose → the leader's own save done (in parallel with the follower's) */
  leaderSave: { p50: number; p99: number } | null;
  total: { p50: number; p99: number };
}

function readEvents(dir: string): Event[] {
  const out: Event[] = [];
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.trace')) continue;
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const [step, node, index, peer, us] = line.split(' ');
      if (step === undefined || us === undefined) continue;
      out.push({ step, node: node!, index: Number(index), peer: peer!, us: Number(us) });
    }
  }
  return out.sort((a, b) => a.us - b.us);
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
 * Line the nodes' steps up with the generator's acquires. `samples` are performance.now()
 * ms in this process; `hrOffsetUs` turns them into the monotonic µs the nodes wrote.
 */
export function analyseTrace(dir: string, samples: readonly { t0: number; t1: number }[], hrOffsetUs: number): TraceResult {
  const evs = readEvents(dir);
  const deltas = new Map<string, number[]>(TRACE_STEPS.map(([s]) => [s, []]));
  const leaderSave: number[] = [];
  const total: number[] = [];
  let matched = 0;
  for (const s of samples) {
    const t0 = s.t0 * 1000 + hrOffsetUs;
    const t1 = s.t1 * 1000 + hrOffsetUs;
    const propose = first(evs, t0, t1, (e) => e.step === 'propose');
    if (!propose) continue;
    const leader = propose.node;
    const idx = propose.index;
    const recv = first(evs, t0, propose.us, (e) => e.step === 'http_recv');
    // the follower whose ack came first is the one the commit waited for
    const ack = first(evs, propose.us, t1, (e) => e.step === 'ack_recv' && e.node === leader && e.index >= idx);
    if (!recv || !ack) continue;
    const f = ack.peer;
    const sent = first(evs, propose.us, t1, (e) => e.step === 'append_sent' && e.node === leader && e.peer === f && e.index >= idx);
    const got = sent && first(evs, sent.us - 1000, t1, (e) => e.step === 'recv_append' && e.node === f && e.index >= idx);
    const saved = got && first(evs, got.us, t1, (e) => e.step === 'saved' && e.node === f && e.index >= idx);
    const acked = saved && first(evs, saved.us, t1, (e) => e.step === 'ack_sent' && e.node === f && e.index >= idx);
    const commit = first(evs, ack.us, t1, (e) => e.step === 'commit' && e.node === leader && e.index === idx);
    const apply = commit && first(evs, commit.us, t1, (e) => e.step === 'apply' && e.node === leader && e.index === idx);
    const answer = apply && first(evs, apply.us, t1 + 1, (e) => e.step === 'http_answer');
    if (!sent || !got || !saved || !acked || !commit || !apply || !answer) continue;
    matched++;
    const at: Record<string, number> = {
      client_send: t0, http_recv: recv.us, propose: propose.us, append_sent: sent.us, recv_append: got.us, saved: saved.us,
      ack_sent: acked.us, ack_recv: ack.us, commit: commit.us, apply: apply.us, http_answer: answer.us, client_recv: t1,
    };
    for (let k = 1; k < TRACE_STEPS.length; k++) deltas.get(TRACE_STEPS[k]![0])!.push(at[TRACE_STEPS[k]![0]]! - at[TRACE_STEPS[k - 1]![0]]!);
    total.push(t1 - t0);
    const ls = first(evs, propose.us, t1, (e) => e.step === 'leader_saved' && e.node === leader && e.index >= idx);
    if (ls) leaderSave.push(ls.us - propose.us);
  }
  return {
    acquires: samples.length,
    matched,
    rows: TRACE_STEPS.slice(1).map(([step, label]) => ({ step, label, p50: pct(deltas.get(step)!, 50), p99: pct(deltas.get(step)!, 99) })),
    leaderSave: leaderSave.length > 0 ? { p50: pct(leaderSave, 50), p99: pct(leaderSave, 99) } : null,
    total: { p50: pct(total, 50), p99: pct(total, 99) },
  };
}

export function traceTable(r: TraceResult): string {
  const ms = (us: number): string => (Number.isNaN(us) ? '-' : (us / 1000).toFixed(3));
  const lines = [
    `Per-step trace of ${r.matched} of ${r.acquires} acquires (uncontended, C=1; ms from the previous step):`,
    '| step | p50 ms | p99 ms | share of p50 sum |',
    '|---|--:|--:|--:|',
  ];
  const sum = r.rows.reduce((a, x) => a + (Number.isNaN(x.p50) ? 0 : x.p50), 0);
  for (const x of r.rows) lines.push(`| ${x.label} | ${ms(x.p50)} | ${ms(x.p99)} | ${sum > 0 ? `${Math.round((100 * x.p50) / sum)}%` : '-'} |`);
  lines.push(`| **acquire, client to client** | ${ms(r.total.p50)} | ${ms(r.total.p99)} | |`);
  if (r.leaderSave) lines.push(`| (leader: propose → own synced save done, in parallel) | ${ms(r.leaderSave.p50)} | ${ms(r.leaderSave.p99)} | |`);
  return lines.join('\n');
}
