// Deadlock detection (docs/lock-fsm.md "Deadlock detection"): the wait-for graph of
// docs/contract.md §5. Its nodes are sessions. A waiting request — on a lock (exclusive or
// shared; a campaign is an exclusive request of its lock), a lock set (each of its places),
// or semaphore permits — waits for every session that holds a conflicting grant of a name
// it waits on, and for every session whose conflicting request is queued ahead of it there:
//  - an exclusive request conflicts with every grant and every request;
//  - a shared request conflicts with an exclusive grant and an exclusive request only;
//  - a semaphore request conflicts with every holder of the semaphore (it waits only when
//    it does not fit beside them) and every request ahead of it. This is the contract's
//    graph, in which a request waits for ALL of them: with several holders a cycle through
//    a semaphore is refused although another holder's release might have let it through.
// A session's own grants and requests are never an edge (it never waits for itself).
//
// A new wait is refused when the session that makes it is reachable from it. Two walks
// decide it, both starting at the new waiter and advanced in turns, the cheaper one first:
//  - forward from the new request (whom it waits for, whom they wait for, …), until it
//    reaches the requesting session (a cycle) or runs out;
//  - backward from the requesting session (who waits for it, who waits for them, …), until
//    it meets a session the new request would wait for directly (a cycle) or runs out.
// The first to run out proves there is no cycle. So deciding costs about twice the smaller
// of the two reachable parts, usually tiny: a waiter nobody waits for (it holds nothing
// anyone waits on, and waits for nothing else) is settled by one step backward however long
// the queue it joins. Only when there is a cycle does the forward walk run to the end of it.
// Each walk is linear in what it reaches, each element touched once: a session is expanded
// once, a lock's or semaphore's holders are listed once, and a queue is scanned only as
// far as the previous scan of it went (a waiter marks "everything ahead of me (behind me,
// backward) is already reached"). A session that holds nothing and waits for nothing
// cannot be on a cycle: its first wait costs O(1), as does the wait of a session whose few
// grants and requests nobody waits behind. The cycle reported is the forward walk's,
// which visits sessions in one fixed order: its result is that of the plain breadth-first
// search the docs define (docs/lock-fsm.md "Deadlock detection": names sorted, holders by
// token, requests ahead nearest first), the same on every replica and after any snapshot
// restore.
//
// Besides the FSM's own check (cycleOfNewWait), this file offers the checkers' views of the
// same graph: waitForCycle (any cycle in a state: there must never be one, every apply
// refuses the wait that would close it) and checkDeadlockAnswer (does a deadlock answer
// name a real cycle of the state it was refused in).

import type { CycleEntry } from './results.js';
import type { FsmCore, LockState, SemState, SemWaiter, Session, Waiter } from './state.js';
import { compareStrings } from './names.js';
import { assertFsm as assert } from '../assert.js';

/** a request about to wait: on lock names (in one mode), or on a semaphore */
export type NewWait = { target: 'lock'; names: readonly string[]; shared: boolean } | { target: 'semaphore'; name: string };

interface Via {
  /** the session whose wait leads to the reached one */
  from: Session;
  /** the name `from` waits on */
  name: string;
  sem: boolean;
}

// Queue scans mark the waiters they pass (Waiter.fwdMark / backMark) with the walk's own
// number: a field compare instead of a set lookup, the hottest step of a long walk. A mark
// is MARK_ALL (this request and every one ahead of it, or behind it backward, is reached),
// MARK_EXCLUSIVE (every exclusive one is), or older than the walk (nothing). Walk numbers
// only ever grow, so a mark of an earlier walk never counts; they are no state (never in
// snapshots, never compared across replicas).
const MARK_EXCLUSIVE = 1;
const MARK_ALL = 2;
let walks = 0;
/** a fresh base for one walk's marks: marks of earlier walks are all below it */
function nextWalk(): number {
  walks += 3;
  return walks;
}

/** one walk of the graph from a set of start edges, looking for `target` */
class Walk {
  private readonly via = new Map<Session, Via>();
  private readonly frontier: Session[] = [];
  /** this walk's marks are base + MARK_* (Waiter.fwdMark) */
  private readonly base = nextWalk();
  /** locks whose every holder (exclusive or shares) is reached */
  private readonly holdersSeen = new Set<LockState>();
  private readonly semHoldersSeen = new Set<SemState>();
  /** semaphore → how long a prefix of its queue is reached */
  private readonly semPrefix = new Map<SemState, number>();
  private readonly semIndex = new Map<SemState, Map<SemWaiter, number>>();
  found: Via | null = null;
  /** how many edges the walk followed (the benchmark's measure of its cost) */
  steps = 0;

  constructor(private readonly target: Session) {}

  /** follows the edge `from` —(name)→ `to`; true once the target is reached */
  private reach(from: Session, name: string, sem: boolean, to: Session): boolean {
    this.steps++;
    if (to === from || this.found !== null) return this.found !== null;
    if (to === this.target) {
      this.found = { from, name, sem };
      return true;
    }
    if (this.via.has(to)) return false;
    this.via.set(to, { from, name, sem });
    this.frontier.push(to);
    return false;
  }

  /** the edges of `from`'s request on lock `l` in mode `shared`, queued at `at` (null: a new
   *  request, at the tail) */
  lockEdges(from: Session, l: LockState, shared: boolean, at: Waiter | null): boolean {
    const name = l.name;
    if (l.holder !== null && this.reach(from, name, false, l.holder)) return true;
    if (!shared && l.shares !== null && !this.holdersSeen.has(l)) {
      this.holdersSeen.add(l);
      for (const sh of [...l.shares.values()].sort((a, b) => a.token - b.token)) if (this.reach(from, name, false, sh.session)) return true;
    }
    let x = at === null ? l.tail : at.prev;
    const all = this.base + MARK_ALL;
    if (shared) {
      const excl = this.base + MARK_EXCLUSIVE;
      for (; x !== null && x.fwdMark < excl; x = x.prev) {
        x.fwdMark = excl;
        if (!x.shared && this.reach(from, name, false, x.session)) return true;
      }
    } else {
      for (; x !== null && x.fwdMark < all; x = x.prev) {
        x.fwdMark = all;
        if (this.reach(from, name, false, x.session)) return true;
      }
    }
    return false;
  }

  /** the edges of `from`'s request on semaphore `sem`, at queue index `at` (a new request:
   *  the queue's length) */
  semEdges(from: Session, sem: SemState, at: number): boolean {
    const name = sem.name;
    if (!this.semHoldersSeen.has(sem)) {
      this.semHoldersSeen.add(sem);
      for (const h of [...sem.holders.values()].sort((a, b) => a.token - b.token)) if (this.reach(from, name, true, h.session)) return true;
    }
    const done = this.semPrefix.get(sem) ?? 0;
    if (at > done) {
      this.semPrefix.set(sem, at);
      for (let i = at - 1; i >= done; i--) if (this.reach(from, name, true, (sem.queue[i] as SemWaiter).session)) return true;
    }
    return false;
  }

  private semPosition(w: SemWaiter): number {
    let idx = this.semIndex.get(w.sem);
    if (idx === undefined) {
      idx = new Map(w.sem.queue.map((x, i) => [x, i]));
      this.semIndex.set(w.sem, idx);
    }
    return idx.get(w) as number;
  }

  /** every edge out of a waiting session: its lock waits by name, then its semaphore waits */
  private expand(t: Session): boolean {
    if (t.waits !== null && t.waits.size === 1) {
      for (const w of t.waits.values()) if (this.lockEdges(t, w.lock, w.shared, w)) return true;
    } else if (t.waits !== null) {
      for (const name of [...t.waits.keys()].sort(compareStrings)) {
        const w = t.waits.get(name) as Waiter;
        if (this.lockEdges(t, w.lock, w.shared, w)) return true;
      }
    }
    if (t.semWaits !== null) {
      for (const name of [...t.semWaits.keys()].sort(compareStrings)) {
        const w = t.semWaits.get(name) as SemWaiter;
        if (this.semEdges(t, w.sem, this.semPosition(w))) return true;
      }
    }
    return false;
  }

  private next = 0;

  /** the new request's own edges (docs/lock-fsm.md: its names sorted) */
  start(c: FsmCore, req: NewWait): void {
    const s = this.target;
    if (req.target === 'lock') {
      for (const name of [...req.names].sort(compareStrings)) {
        const l = c.locks.get(name);
        if (l !== undefined && this.lockEdges(s, l, req.shared, null)) return;
      }
    } else {
      const sem = c.sems.get(req.name);
      if (sem !== undefined) this.semEdges(s, sem, sem.queue.length);
    }
  }

  /** expands the next session of the breadth-first order: 'found', 'done' (nothing left to
   *  expand, target not reached) or 'more' */
  advance(): 'found' | 'done' | 'more' {
    if (this.found !== null) return 'found';
    if (this.next >= this.frontier.length) return 'done';
    return this.expand(this.frontier[this.next++] as Session) ? 'found' : this.next >= this.frontier.length ? 'done' : 'more';
  }

  /** breadth first from the start edges already followed, until the target is found */
  run(): boolean {
    while (this.advance() === 'more');
    return this.found !== null;
  }

  /** the cycle found: the target first, each session with the name it waits on */
  cycle(): CycleEntry[] {
    const f = this.found;
    if (f === null) return [];
    const out: CycleEntry[] = [];
    let cur = f.from;
    let step: Via = f;
    for (;;) {
      out.push(entry(cur, step));
      if (cur === this.target) break;
      const back = this.via.get(cur) as Via;
      step = back;
      cur = back.from;
    }
    return out.reverse();
  }
}

function entry(s: Session, v: Via): CycleEntry {
  return v.sem ? { sessionId: s.id, name: v.name, kind: 'semaphore' } : { sessionId: s.id, name: v.name };
}

/**
 * The cycle a new wait of session `s` would close, or null. `req` is the request about to
 * be queued (not queued yet: refusing it changes nothing): lock names it would queue for,
 * or a semaphore. The answer's first entry is `s` with the name through which its new
 * request reaches the cycle.
 */
export function cycleOfNewWait(c: FsmCore, s: Session, req: NewWait): CycleEntry[] | null {
  if (c.testNoDeadlockDetection) return null; // the mutation table's switch (state.ts)
  return walkNewWait(c, s, req).cycle;
}

/**
 * The state machine's answer, for checkers: the cycle a new wait of `sessionId` on `req`
 * would close in this state (null: none, or the session is not live). What apply answers
 * `deadlock` with when that request would otherwise be queued.
 */
export function wouldDeadlock(fsm: { readonly core: FsmCore }, sessionId: string, req: NewWait): CycleEntry[] | null {
  const s = fsm.core.sessions.get(sessionId);
  return s === undefined ? null : cycleOfNewWait(fsm.core, s, req);
}

/** cycleOfNewWait, with the number of edges the walks followed (bench/fsm.ts) */
export function walkNewWait(c: FsmCore, s: Session, req: NewWait): { cycle: CycleEntry[] | null; steps: number } {
  // Nothing waits for a session that holds nothing and waits for nothing, or whose grants
  // and requests nobody waits behind: the backward walk's first step, without building it.
  if (nobodyWaitsFor(s)) return { cycle: null, steps: 0 };
  const fwd = new Walk(s);
  const back = new BackWalk(c, s, req);
  let started = false;
  let cycle = false;
  for (;;) {
    if (back.steps <= fwd.steps) {
      const b = back.advance();
      if (b === 'done') return { cycle: null, steps: fwd.steps + back.steps };
      if (b === 'found') { cycle = true; break; }
    } else {
      if (!started) { started = true; fwd.start(c, req); }
      const f = fwd.advance();
      if (f === 'done') return { cycle: null, steps: fwd.steps + back.steps };
      if (f === 'found') { cycle = true; break; }
    }
  }
  // a cycle exists: the forward walk, run to where it closes, names it
  if (!started) fwd.start(c, req);
  const closed = fwd.found !== null || fwd.run();
  assert(closed && cycle, `deadlock walk of ${s.id}: the backward walk met the new request's targets but the forward walk found no cycle`);
  return { cycle: fwd.cycle(), steps: fwd.steps + back.steps };
}

/** How many of a session's grants and waits the quick check looks at before it leaves the
 *  question to the walks (a session with many grants: the walks are linear anyway). */
const QUICK_CHECK = 16;

/** true when surely nobody waits for `s`: no request is queued on a lock or semaphore it
 *  holds, and none behind any of its own requests (a conservative answer: false may still
 *  be nobody, e.g. only shared requests behind a shared wait) */
function nobodyWaitsFor(s: Session): boolean {
  let n = 0;
  for (let l = s.heldHead; l !== null; l = l.heldNext) if (l.head !== null || ++n > QUICK_CHECK) return false;
  if (s.shares !== null) for (const sh of s.shares.values()) if (sh.lock.head !== null || ++n > QUICK_CHECK) return false;
  if (s.sems !== null) for (const h of s.sems.values()) if (h.sem.queue.length > 0 || ++n > QUICK_CHECK) return false;
  if (s.waits !== null) for (const w of s.waits.values()) if (w.next !== null || ++n > QUICK_CHECK) return false;
  if (s.semWaits !== null) for (const w of s.semWaits.values()) if (w.sem.queue[w.sem.queue.length - 1] !== w || ++n > QUICK_CHECK) return false;
  return true;
}

/**
 * The backward walk: who waits for the requesting session, who waits for them, and so on
 * (the graph's edges reversed: a session holding a grant is waited for by the conflicting
 * requests in that name's queue; a request is waited for by the conflicting requests
 * behind it). It looks for a session the new request would wait for directly.
 */
class BackWalk {
  private readonly seen = new Set<Session>();
  private readonly frontier: Session[];
  private next = 0;
  /** this walk's marks are base + MARK_* (Waiter.backMark: x and every request behind it) */
  private readonly base = nextWalk();
  /** semaphore → the index from which its queue's suffix is reached */
  private readonly semSuffix = new Map<SemState, number>();
  private readonly locks: { name: string; l: LockState | undefined }[];
  private found = false;
  steps = 0;

  constructor(private readonly c: FsmCore, private readonly s: Session, private readonly req: NewWait) {
    this.frontier = [s];
    this.seen.add(s);
    this.locks = req.target === 'lock' ? req.names.map((name) => ({ name, l: c.locks.get(name) })) : [];
  }

  /** would the new request wait for x directly (x holds a conflicting grant of one of its
   *  names, or has a conflicting request queued there: the new request queues last)? */
  private direct(x: Session): boolean {
    const req = this.req;
    if (req.target === 'semaphore') return this.c.sems.get(req.name)?.holders.has(x.id) === true || x.semWaits?.has(req.name) === true;
    for (const { name, l } of this.locks) {
      if (l === undefined) continue;
      if (l.holder === x || (!req.shared && l.shares?.has(x.id) === true)) return true;
      const w = x.waits?.get(name);
      if (w !== undefined && (!req.shared || !w.shared)) return true;
    }
    return false;
  }

  private visit(x: Session): boolean {
    this.steps++;
    if (this.found || this.seen.has(x)) return this.found;
    if (this.direct(x)) return (this.found = true);
    this.seen.add(x);
    this.frontier.push(x);
    return false;
  }

  /** the requests from `x` on (x included) that conflict with a request or grant of this
   *  mode: all of them, or only the exclusive ones */
  private scanFrom(x: Waiter | null, exclusiveOnly: boolean): boolean {
    if (exclusiveOnly) {
      const excl = this.base + MARK_EXCLUSIVE;
      for (; x !== null && x.backMark < excl; x = x.next) {
        x.backMark = excl;
        if (!x.shared && this.visit(x.session)) return true;
      }
    } else {
      const all = this.base + MARK_ALL;
      for (; x !== null && x.backMark < all; x = x.next) {
        x.backMark = all;
        if (this.visit(x.session)) return true;
      }
    }
    return false;
  }

  private semFrom(sem: SemState, from: number): boolean {
    const done = this.semSuffix.get(sem) ?? sem.queue.length;
    if (from >= done) return false;
    this.semSuffix.set(sem, from);
    for (let i = from; i < done; i++) if (this.visit((sem.queue[i] as SemWaiter).session)) return true;
    return false;
  }

  /** every edge into t: requests that conflict with its grants, and with its requests from behind */
  private expand(t: Session): boolean {
    for (let l = t.heldHead; l !== null; l = l.heldNext) if (this.scanFrom(l.head, false)) return true;
    if (t.shares !== null) for (const sh of t.shares.values()) if (this.scanFrom(sh.lock.head, true)) return true;
    if (t.sems !== null) for (const h of t.sems.values()) if (this.semFrom(h.sem, 0)) return true;
    if (t.waits !== null) for (const w of t.waits.values()) if (this.scanFrom(w.next, w.shared)) return true;
    if (t.semWaits !== null) for (const w of t.semWaits.values()) if (this.semFrom(w.sem, w.sem.queue.indexOf(w) + 1)) return true;
    return false;
  }

  advance(): 'found' | 'done' | 'more' {
    if (this.found) return 'found';
    if (this.next >= this.frontier.length) return 'done';
    if (this.expand(this.frontier[this.next++] as Session)) return 'found';
    return this.next >= this.frontier.length ? 'done' : 'more';
  }
}

/** Is `s` on a cycle of the current graph? The cycle through it (s first), or null. */
function cycleThrough(c: FsmCore, s: Session): CycleEntry[] | null {
  const walk = new Walk(s);
  if (s.waits !== null) {
    for (const name of [...s.waits.keys()].sort(compareStrings)) {
      const w = s.waits.get(name) as Waiter;
      if (walk.lockEdges(s, w.lock, w.shared, w)) break;
    }
  }
  if (walk.found === null && s.semWaits !== null) {
    for (const name of [...s.semWaits.keys()].sort(compareStrings)) {
      const w = s.semWaits.get(name) as SemWaiter;
      if (walk.semEdges(s, w.sem, w.sem.queue.indexOf(w))) break;
    }
  }
  return walk.found !== null || walk.run() ? walk.cycle() : null;
}

/**
 * A cycle of the state's wait-for graph, or null (checkers, assertFsmInvariants). There is
 * never one: the apply that would have closed it refused that wait (`deadlock`), and
 * nothing else adds an edge between two sessions that did not already wait for each
 * other (a grant turns "queued ahead" into "holds", for the same pair). Cost: one walk per
 * waiting session, O(waiting sessions × the graph): for tests and the simulator.
 */
export function waitForCycle(fsm: { readonly core: FsmCore }): CycleEntry[] | null {
  const c = fsm.core;
  const waiting = [...c.sessions.values()].filter((s) => s.waits !== null || s.semWaits !== null).sort((a, b) => compareStrings(a.id, b.id));
  for (const s of waiting) {
    const cycle = cycleThrough(c, s);
    if (cycle !== null) return cycle;
  }
  return null;
}

/**
 * Does `cycle`, the answer to a `deadlock`-refused request `req` of session `cycle[0]`,
 * name a real cycle of state `c` (the state it was refused in, which the refusal left
 * unchanged)? null if it does, else what is wrong. Checks each step: the refused request
 * on cycle[0].name would wait for cycle[1]'s session, and each later session waits on its
 * name for the next, the last for the first.
 */
export function checkDeadlockAnswer(fsm: { readonly core: FsmCore }, req: NewWait, cycle: readonly CycleEntry[]): string | null {
  const c = fsm.core;
  if (cycle.length < 2) return `a cycle of ${cycle.length} sessions`;
  const ids = cycle.map((e) => e.sessionId);
  if (new Set(ids).size !== ids.length) return `the cycle names a session twice: ${ids.join(' → ')}`;
  for (let i = 0; i < cycle.length; i++) {
    const e = cycle[i] as CycleEntry;
    const next = cycle[(i + 1) % cycle.length] as CycleEntry;
    const from = c.sessions.get(e.sessionId);
    const to = c.sessions.get(next.sessionId);
    if (from === undefined || to === undefined) return `step ${i}: session ${from === undefined ? e.sessionId : next.sessionId} is not live`;
    const ok = i === 0 ? newWaitWaitsFor(c, req, e, to) : waitsFor(c, from, e, to);
    if (!ok) return `step ${i}: ${e.sessionId} does not wait on ${e.kind === 'semaphore' ? 'semaphore ' : ''}${e.name} for ${next.sessionId}`;
  }
  return null;
}

/** would the new request, on name e.name, wait for `to`? */
function newWaitWaitsFor(c: FsmCore, req: NewWait, e: CycleEntry, to: Session): boolean {
  if (req.target === 'semaphore') {
    const sem = c.sems.get(req.name);
    return e.kind === 'semaphore' && e.name === req.name && sem !== undefined && (sem.holders.has(to.id) || sem.queue.some((w) => w.session === to));
  }
  if (e.kind === 'semaphore' || !req.names.includes(e.name)) return false;
  const l = c.locks.get(e.name);
  return l !== undefined && lockBlocks(l, req.shared, null, to);
}

/** does `from`'s existing wait on e.name wait for `to`? */
function waitsFor(c: FsmCore, from: Session, e: CycleEntry, to: Session): boolean {
  if (e.kind === 'semaphore') {
    const w = from.semWaits?.get(e.name);
    if (w === undefined) return false;
    const q = w.sem.queue;
    return w.sem.holders.has(to.id) || q.slice(0, q.indexOf(w)).some((x) => x.session === to);
  }
  const w = from.waits?.get(e.name);
  return w !== undefined && lockBlocks(w.lock, w.shared, w, to);
}

/** does `to` hold a grant of l, or have a request ahead of `at` (null: the tail), that a
 *  request of this mode conflicts with? */
function lockBlocks(l: LockState, shared: boolean, at: Waiter | null, to: Session): boolean {
  if (l.holder === to) return true;
  if (!shared && l.shares?.has(to.id) === true) return true;
  for (let x = at === null ? l.tail : at.prev; x !== null; x = x.prev) if (x.session === to && (!shared || !x.shared)) return true;
  return false;
}
