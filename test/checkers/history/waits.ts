// Checker 14, waits end by their wait_ms (docs/api.md "Waits"): a queued acquire waits at
// most its wait_ms from its last arrival (a retry with the same key may extend it), plus
// the log time elections do not count, whichever node proposed it and however many
// leaders came between. The history cannot see when a wait ended, but fencing tokens order
// grants: a grant with token T of an exclusive lock came after every grant with a lower
// token. So when an operation invoked after the wait's deadline saw the lock held with a
// lower token (a read naming the holder, or an acquire granted then), the wait's grant T
// came after that deadline — the wait outlived its wait_ms. T is the acquire's own answer,
// or, for one whose answer was lost, the token a later read shows its session holding
// before the session acquires the name again.
import { describeOp, type Op } from './history.js';
import { isSharedLock } from './names.js';

type Window = { start: number; end: number; variant?: string };

/** Leaders taking office (the node logs' role changes, on the run's clock: checker 7's
 *  input) and the longest election timeout; without them every fault window counts whole. */
export interface Offices {
  t: readonly number[];
  electionMaxMs: number;
}

/** the offices the wait checkers may use: none when the logs gave none or a clock fault ran
 *  (it moves a node's wall clock, which dates its log lines) */
export function officesOf(elections: readonly { t: number }[] | undefined, faults: readonly { variant?: string }[], electionMaxMs: number): Offices | undefined {
  if (!elections || elections.length === 0 || faults.some((f) => (f.variant ?? '').startsWith('clock'))) return undefined;
  return { t: elections.map((e) => e.t).sort((a, b) => a - b), electionMaxMs };
}

/** fault kinds whose whole window may stamp less log time than real time passes: a node's
 *  clock running slow, membership and disk faults (a node replaced, refusing or rebuilt) */
const WHOLE_WINDOW = /^(clock|member|wipe|corrupt)/;

/**
 * The real time during [from, to] that log time may not have counted (docs/lock-fsm.md "Log
 * time": a leader adds only the monotonic time it measured in office, so what is lost is
 * the time between the last stamp of a leader and the next leader taking office).
 * - With the leaders' offices known: for a kill, pause, partition, packet or transfer fault,
 *   from its start to the last leader that took office during it or within two election
 *   timeouts of its heal (no new leader: the same one stamped throughout, nothing lost);
 *   a leader that took office with no fault near is another `gapMs`.
 * - Without them, and for the kinds in WHOLE_WINDOW: the fault's whole window.
 */
function uncounted(from: number, to: number, gapMs: number, faults: readonly Window[], offices?: Offices): number {
  let lost = 0;
  const explained = new Set<number>();
  for (const f of faults) {
    if (f.start > to || f.end < from) continue;
    if (!offices || WHOLE_WINDOW.test(f.variant ?? '')) {
      lost += f.end - Math.max(f.start, from);
      continue;
    }
    const mine = offices.t.filter((o) => o > f.start && o <= f.end + 2 * offices.electionMaxMs);
    for (const o of mine) explained.add(o);
    if (mine.length > 0) lost += Math.max(0, Math.min(Math.max(...mine), to) - Math.max(f.start, from));
  }
  if (offices) for (const o of offices.t) if (o >= from && o <= to && !explained.has(o)) lost += gapMs;
  return lost;
}

/** the latest moment the contract lets a wait of `a` still be queued: its last attempt's
 *  send (the arrival is no earlier) + wait_ms + `gapMs` (one election), + the real time log
 *  time may not have counted over that span (`uncounted`, to a fixed point: what it adds
 *  may reach further faults) */
function waitDeadline(a: Op, gapMs: number, faults: readonly Window[], offices?: Offices): number {
  // never later than the rule without offices (every fault window whole): this checker
  // only gets stricter with what the node logs tell
  return offices ? Math.min(deadlineBy(a, gapMs, faults), deadlineBy(a, gapMs, faults, offices)) : deadlineBy(a, gapMs, faults);
}

function deadlineBy(a: Op, gapMs: number, faults: readonly Window[], offices?: Offices): number {
  const from = a.output.last_try ?? a.completedAt;
  // a request sent while a node (or its client) was paused or cut off may arrive, and be
  // queued, only when that fault heals (a paused node reads its socket on SIGCONT, TCP
  // resends what a partition dropped): its wait counts from then (a kill drops it instead)
  const late = offices ? Math.max(0, ...faults.filter((f) => f.start <= from && from <= f.end && !(f.variant ?? '').startsWith('kill')).map((f) => f.end - from)) : 0;
  const base = from + late + (a.input.wait_ms ?? 0) + gapMs;
  let deadline = base;
  for (let i = 0; i < 100; i++) {
    const next = base + uncounted(from, deadline, gapMs, faults, offices);
    if (next <= deadline) break;
    deadline = next;
  }
  return deadline;
}

/** `gapMs`: the log time elections may leave uncounted (the runner's liveness bound); a
 *  fault window overlapping a wait's span adds its length (a leader paused, cut off or
 *  running a slow clock stamps less log time than real time passes) */
export function checkWaitBounds(ops: readonly Op[], gapMs: number, faults: readonly Window[] = [], offices?: Offices): string[] {
  const v: string[] = [];
  const byLock = new Map<string, Op[]>();
  for (const o of ops) {
    const l = o.input.lock;
    if (!l || isSharedLock(l) || (o.f !== 'acquire' && o.f !== 'read')) continue;
    let xs = byLock.get(l);
    if (!xs) byLock.set(l, (xs = []));
    xs.push(o);
  }
  for (const [lock, xs] of byLock) {
    // observations: (invoke time, token current then)
    const seen: { at: number; token: number; op: Op }[] = [];
    for (const o of xs) {
      if (o.type !== 'ok') continue;
      if (o.f === 'read' && o.output.holder_token !== undefined) seen.push({ at: o.invoke, token: o.output.holder_token, op: o });
      if (o.f === 'acquire' && o.output.token !== undefined && o.output.token > 0) seen.push({ at: o.invoke, token: o.output.token, op: o });
    }
    for (const a of xs) {
      const w = a.input.wait_ms;
      const s = a.input.session;
      if (a.f !== 'acquire' || !w || !s || a.type === 'fail' || a.input.mode === 'shared') continue;
      let token = a.type === 'ok' ? a.output.token : undefined;
      if (token === undefined) {
        // a lost answer: the session's grant a later read shows, before its next acquire of the name
        const next = xs.find((o) => o.f === 'acquire' && o.input.session === s && o.invoke > a.invoke);
        const r = xs.find((o) => o.f === 'read' && o.type === 'ok' && o.output.holder === s && o.invoke > a.invoke && (!next || o.completedAt < next.invoke));
        token = r?.output.holder_token;
      }
      if (token === undefined || token < 1) continue;
      const deadline = waitDeadline(a, gapMs, faults, offices);
      const b = seen.find((x) => x.at > deadline && x.token < token && x.op !== a);
      if (b) v.push(`waits: ${lock}: the wait of ${a.id} (session ${s.slice(0, 8)}, wait_ms ${w}, last sent at ${(a.output.last_try ?? a.completedAt).toFixed(0)}) was granted token ${token} after ${b.at.toFixed(0)} ms, when the lock was still at token ${b.token} — past its deadline ${deadline.toFixed(0)} (wait_ms + ${gapMs} ms for elections)\n    ${describeOp(a)}\n    ${describeOp(b.op)}`);
    }
  }
  return v;
}

/**
 * Checker 14, second half: waits counted in the queue. A linearizable read of a lock shows
 * its `waiters` (docs/contract.md "GET /v1/locks/{name}"). A session waits at most once on
 * a name (a later acquire of it finds the same wait), and the holder never waits. So at a
 * read R, at most one waiter per session that has a waiting acquire (or acquire-all) of
 * the name which can still be queued at R's linearization point: invoked before R
 * completed, and not over before R was invoked — over at its deadline (`waitDeadline`), or
 * at its answer when it was answered (granted, or refused: the wait had ended). More
 * waiters than that: some wait outlived its wait_ms — a wait the cluster forgot to end
 * (a leader change between propose and commit, docs/api.md "Waits") sits in the queue of a
 * held lock long after its client was answered or gave up, whether or not it is ever
 * granted, and no token order shows it until it is. The waits past their deadline whose
 * sessions may still be alive are named as the suspects. `ops` as recorded: lock sets not
 * projected (a refused acquire-all waited too, until its answer).
 */
export function checkWaitQueues(ops: readonly Op[], gapMs: number, faults: readonly Window[] = [], offices?: Offices): string[] {
  const v: string[] = [];
  type W = { op: Op; session: string; end: number };
  const waits = new Map<string, W[]>();
  const reads: Op[] = [];
  for (const o of ops) {
    if (o.f === 'read' && o.type === 'ok' && o.input.lock && !isSharedLock(o.input.lock) && o.output.waiters !== undefined) reads.push(o);
    const names = o.f === 'acquire' ? (o.input.lock ? [o.input.lock] : []) : o.f === 'acquire-all' ? (o.input.names ?? []) : [];
    if (names.length === 0 || !o.input.wait_ms || o.input.mode === 'shared') continue;
    const deadline = waitDeadline(o, gapMs, faults, offices);
    const end = o.type === 'info' ? deadline : Math.min(deadline, o.completedAt);
    // an acquire that opened its session names none: a session of its own
    const w = { op: o, session: o.input.session ?? `#${o.id}`, end };
    for (const n of names) {
      let xs = waits.get(n);
      if (!xs) waits.set(n, (xs = []));
      xs.push(w);
    }
  }
  // one violation per run of consecutive reads of a name that count too many (a forgotten
  // wait stays queued until something ends it: every read meanwhile shows it)
  const open = new Map<string, { first: Op; last: Op; n: number; live: number; more: number; suspects: W[] }>();
  const flush = (lock: string): void => {
    const e = open.get(lock);
    if (!e) return;
    open.delete(lock);
    v.push(
      `waits: ${lock}: a read shows ${e.n} waiter(s) at ${e.first.invoke.toFixed(0)}–${e.first.completedAt.toFixed(0)} ms, but only ${e.live} session(s) can still be waiting then (every other wait was answered or past its wait_ms + ${gapMs} ms for an election + the log time faults may not count): a wait outlived its wait_ms${e.more > 0 ? ` (and ${e.more} later read(s) until ${e.last.invoke.toFixed(0)} ms)` : ''}\n    ${describeOp(e.first)}` +
        e.suspects.map((w) => `\n    suspect (past its deadline ${w.end.toFixed(0)}): ${describeOp(w.op)}`).join(''),
    );
  };
  for (const r of [...reads].sort((a, b) => a.invoke - b.invoke)) {
    const lock = r.input.lock!;
    const n = r.output.waiters!;
    const xs = waits.get(lock) ?? [];
    const live = new Set<string>();
    for (const w of xs) if (w.op.invoke < r.completedAt && w.end >= r.invoke && w.session !== r.output.holder) live.add(w.session);
    if (n <= live.size) {
      flush(lock);
      continue;
    }
    const e = open.get(lock);
    if (e) {
      e.last = r;
      e.more++;
      continue;
    }
    const suspects = xs.filter((w) => w.op.type === 'info' && w.end < r.invoke && !live.has(w.session) && w.session !== r.output.holder).slice(-3);
    open.set(lock, { first: r, last: r, n, live: live.size, more: 0, suspects });
  }
  for (const lock of [...open.keys()]) flush(lock);
  return v;
}
