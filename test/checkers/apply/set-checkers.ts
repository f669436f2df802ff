// Lock sets and deadlocks, checked on every node at every applied index (docs/simulation-lock.md
// "Checkers"; docs/lock-fsm.md "Lock sets", "Deadlock detection"):
//  - SetAtomic: no set is ever partly held. Of a set that waited before an apply, either
//    every place is granted in that apply, to the set's session, with its setGranted, or
//    none; every name an acquired_all or a setGranted answers is held by that session
//    under the token answered once the apply is done.
//  - DeadlockReal: every `deadlock` answer names a real cycle of the wait-for graph of the
//    state the request was refused in (each edge checked against the node's state before
//    the apply), the refused request's session first and its first step a wait the refused
//    request would have had; the refusal changes no edge; and after every apply no cycle
//    persists in the wait-for graph.
// The wait-for graph is built here from docs/contract.md §5's definition over plain views
// of the state (who holds what in which mode, who waits in which order), not by
// src/lock-fsm/deadlock.ts, so a wrong walk there cannot hide behind itself.
import type { ApplyOutput, Command, CycleEntry, LockFsm } from '../../../src/lock-fsm/index.js';
import type { ModeViolation } from './mode-checkers.js';

type Mode = 'exclusive' | 'shared';
export interface LockGraphView { name: string; holders: { sid: string; mode: Mode }[]; waiters: { sid: string; mode: Mode }[] }
export interface SemGraphView { name: string; holders: string[]; waiters: string[] }
/** the state as the wait-for graph sees it */
export interface GraphView { locks: LockGraphView[]; sems: SemGraphView[] }
/** a waiting lock set: its session, its identity (since) and the names it has places for */
export interface SetView { sid: string; since: number; places: string[] }

export function graphViewOf(fsm: LockFsm): GraphView {
  const locks: LockGraphView[] = [];
  for (const l of fsm.core.locks.values()) {
    const holders: LockGraphView['holders'] = [];
    if (l.holder !== null) holders.push({ sid: l.holder.id, mode: 'exclusive' });
    for (const sid of l.shares?.keys() ?? []) holders.push({ sid, mode: 'shared' });
    const waiters: LockGraphView['waiters'] = [];
    for (let w = l.head; w !== null; w = w.next) waiters.push({ sid: w.session.id, mode: w.shared ? 'shared' : 'exclusive' });
    locks.push({ name: l.name, holders, waiters });
  }
  const sems: SemGraphView[] = [];
  for (const s of fsm.core.sems.values()) sems.push({ name: s.name, holders: [...s.holders.keys()], waiters: s.queue.map((w) => w.session.id) });
  return { locks, sems };
}

export function setViewsOf(fsm: LockFsm): SetView[] {
  return [...fsm.core.lockSets].map((s) => ({ sid: s.session.id, since: s.since, places: s.members.map((m) => m.lock.name) }));
}

const edgeKey = (from: string, kind: 'lock' | 'semaphore', name: string, to: string): string => `${from}\u0000${kind}\u0000${name}\u0000${to}`;

/** who a request of `mode` by `sid` at queue position i of a lock waits for */
function lockBlockers(l: LockGraphView, sid: string, mode: Mode, i: number): string[] {
  const out: string[] = [];
  for (const h of l.holders) if (h.sid !== sid && (h.mode === 'exclusive' || mode === 'exclusive')) out.push(h.sid);
  for (let j = 0; j < i; j++) {
    const a = l.waiters[j]!;
    if (a.sid !== sid && (a.mode === 'exclusive' || mode === 'exclusive')) out.push(a.sid);
  }
  return out;
}

function semBlockers(s: SemGraphView, sid: string, i: number): string[] {
  return [...s.holders, ...s.waiters.slice(0, i)].filter((x) => x !== sid);
}

/** every edge of the wait-for graph, as from/kind/name/to keys */
export function edgesOf(v: GraphView): Set<string> {
  const out = new Set<string>();
  for (const l of v.locks) l.waiters.forEach((w, i) => { for (const to of lockBlockers(l, w.sid, w.mode, i)) out.add(edgeKey(w.sid, 'lock', l.name, to)); });
  for (const s of v.sems) s.waiters.forEach((w, i) => { for (const to of semBlockers(s, w, i)) out.add(edgeKey(w, 'semaphore', s.name, to)); });
  return out;
}

/** a cycle of the graph (its sessions), or null */
export function findCycle(edges: Set<string>): string[] | null {
  const adj = new Map<string, string[]>();
  for (const e of edges) {
    const [from, , , to] = e.split('\u0000') as [string, string, string, string];
    const a = adj.get(from) ?? [];
    a.push(to);
    adj.set(from, a);
  }
  const colour = new Map<string, 1 | 2>(); // 1: on the path, 2: done
  for (const root of adj.keys()) {
    if (colour.has(root)) continue;
    const path: string[] = [root];
    const next: number[] = [0];
    colour.set(root, 1);
    while (path.length > 0) {
      const at = path[path.length - 1]!;
      const outs = adj.get(at) ?? [];
      const k = next[next.length - 1]!;
      if (k >= outs.length) {
        colour.set(at, 2);
        path.pop();
        next.pop();
        continue;
      }
      next[next.length - 1] = k + 1;
      const to = outs[k]!;
      const c = colour.get(to);
      if (c === 1) return path.slice(path.indexOf(to));
      if (c === undefined) {
        colour.set(to, 1);
        path.push(to);
        next.push(0);
      }
    }
  }
  return null;
}

/** what a refused request asked to wait on: lock names in a mode, or a semaphore */
export type RefusedWait = { kind: 'lock'; names: string[]; mode: Mode } | { kind: 'semaphore'; name: string };

export function refusedWaitOf(cmd: Command): RefusedWait | null {
  switch (cmd.kind) {
    case 'acquire': return { kind: 'lock', names: [cmd.name], mode: cmd.mode === 'shared' ? 'shared' : 'exclusive' };
    case 'campaign': return { kind: 'lock', names: [cmd.name], mode: 'exclusive' };
    case 'acquireAll': return { kind: 'lock', names: [...cmd.names], mode: cmd.mode === 'shared' ? 'shared' : 'exclusive' };
    case 'semAcquire': return { kind: 'semaphore', name: cmd.name };
    default: return null;
  }
}

/** null when `cycle` is a real cycle closed by `sid`'s new wait `req` in the state `before`
 *  (with its edges `edges`), else what is wrong */
export function checkDeadlockCycle(before: GraphView, edges: Set<string>, sid: string, req: RefusedWait | null, cycle: readonly CycleEntry[]): string | null {
  if (req === null) return 'answered to a command that never waits';
  if (cycle.length < 2) return `a cycle of ${cycle.length} step(s): a session never waits for itself`;
  if (cycle[0]!.sessionId !== sid) return `the cycle starts with ${cycle[0]!.sessionId}, not the refused request's session ${sid}`;
  const first = cycle[0]!;
  const to0 = cycle[1]!.sessionId;
  if (req.kind === 'semaphore') {
    if (first.kind !== 'semaphore' || first.name !== req.name) return `the first step waits on ${first.kind ?? 'lock'} ${first.name}, not the requested semaphore ${req.name}`;
    const s = before.sems.find((x) => x.name === req.name);
    if (!s || !semBlockers(s, sid, s.waiters.length).includes(to0)) return `${sid}'s new wait on semaphore ${req.name} would not wait for ${to0}`;
  } else {
    if (first.kind === 'semaphore' || !req.names.includes(first.name)) return `the first step waits on ${first.kind ?? 'lock'} ${first.name}, not a requested lock (${req.names.join(', ')})`;
    const l = before.locks.find((x) => x.name === first.name);
    if (l === undefined || !lockBlockers(l, sid, req.mode, l.waiters.length).includes(to0)) return `${sid}'s new ${req.mode} wait on ${first.name} would not wait for ${to0}`;
  }
  for (let k = 1; k < cycle.length; k++) {
    const e = cycle[k]!;
    const to = cycle[(k + 1) % cycle.length]!.sessionId;
    if (!edges.has(edgeKey(e.sessionId, e.kind === 'semaphore' ? 'semaphore' : 'lock', e.name, to))) return `step ${k}: ${e.sessionId} does not wait on ${e.kind ?? 'lock'} ${e.name} for ${to} in the state before the apply`;
  }
  return null;
}

/** null when the apply granted every waiting set of `before` whole or not at all, and every
 *  set it answered or announced is held whole after it; else what is wrong.
 *  holds(name, sid, token): the session holds the name with that token after the apply. */
export function checkSetsAtomic(before: readonly SetView[], out: ApplyOutput, holds: (name: string, sid: string, token: number) => boolean): string | null {
  const granted = new Map<string, Map<string, number>>(); // session → name → token granted in this apply
  for (const e of out.events) {
    if (e.type !== 'granted') continue;
    const m = granted.get(e.sessionId) ?? new Map<string, number>();
    m.set(e.name, e.fencingToken);
    granted.set(e.sessionId, m);
  }
  for (const set of before) {
    const mine = granted.get(set.sid);
    const got = set.places.filter((n) => mine?.has(n) === true);
    const ann = out.events.find((e) => e.type === 'setGranted' && e.sessionId === set.sid && e.since === set.since);
    if (got.length === 0 && ann === undefined) continue;
    if (got.length !== set.places.length) return `set of ${set.sid} at ${set.since} partly granted: ${got.join(',') || 'none'} of ${set.places.join(',')}`;
    if (ann === undefined || ann.type !== 'setGranted') return `set of ${set.sid} at ${set.since} granted without its setGranted`;
    for (const n of set.places) {
      const g = ann.grants.find((x) => x.name === n);
      if (!g || g.fencingToken !== mine!.get(n)) return `set of ${set.sid} at ${set.since}: setGranted names ${n} with ${g?.fencingToken ?? 'no token'}, the grant carried ${mine!.get(n)}`;
    }
  }
  const whole = (what: string, sid: string, grants: readonly { name: string; fencingToken: number }[]): string | null => {
    const missing = grants.filter((g) => !holds(g.name, sid, g.fencingToken));
    return missing.length === 0 ? null : `${what} of ${sid} is partly held after the apply: ${missing.map((g) => `${g.name}/${g.fencingToken}`).join(', ')} not held`;
  };
  for (const e of out.events) {
    if (e.type !== 'setGranted') continue;
    const why = whole(`set granted at ${e.since}`, e.sessionId, e.grants);
    if (why !== null) return why;
  }
  const r = out.result;
  if (!out.replayed && r.ok && r.kind === 'acquired_all') return whole('acquired_all', r.sessionId, r.grants);
  return null;
}

/** the session holds `name` with `token` (exclusively or as a share) */
export function holdsIn(fsm: LockFsm): (name: string, sid: string, token: number) => boolean {
  return (name, sid, token) => {
    const l = fsm.core.locks.get(name);
    if (l === undefined) return false;
    if (l.holder !== null) return l.holder.id === sid && l.token === token;
    return l.shares?.get(sid)?.token === token;
  };
}

/** per node: the sets and the graph after its last apply (the state before its next one) */
export class SetShadow {
  private readonly before = new Map<string, { sets: SetView[]; view: GraphView; edges: Set<string> }>();
  readonly counts = { setsQueued: 0, setsGranted: 0, deadlocks: 0, deadlockChecks: 0 };

  constructor(private readonly fail: ModeViolation) {}

  /** the node (re)started or installed a snapshot: its state is the FSM's as it is */
  onRestored(nodeId: string, fsm: LockFsm): void {
    const view = graphViewOf(fsm);
    this.before.set(nodeId, { sets: setViewsOf(fsm), view, edges: edgesOf(view) });
  }

  /** after `nodeId` applied `index` (first: the first apply of it anywhere, for the counts) */
  onApplied(nodeId: string, index: number, out: ApplyOutput | undefined, cmd: () => Command | undefined, fsm: LockFsm, first: boolean): void {
    const b = this.before.get(nodeId) ?? { sets: [], view: { locks: [], sems: [] }, edges: new Set<string>() };
    const view = graphViewOf(fsm);
    const edges = edgesOf(view);
    const where = `${nodeId} at ${index}`;
    if (out !== undefined) {
      const why = checkSetsAtomic(b.sets, out, holdsIn(fsm));
      if (why !== null) this.fail('SetAtomic', `${where}: ${why}`);
      const r = out.result;
      if (first && r.ok && r.kind === 'queued_all' && !out.replayed) this.counts.setsQueued++;
      if (first) this.counts.setsGranted += out.events.filter((e) => e.type === 'setGranted').length + (r.ok && r.kind === 'acquired_all' && !out.replayed ? 1 : 0);
      if (!r.ok && r.code === 'deadlock' && !out.replayed) {
        const c = cmd();
        const sid = (c as { sessionId?: string } | undefined)?.sessionId ?? '';
        const whyCycle = checkDeadlockCycle(b.view, b.edges, sid, c === undefined ? null : refusedWaitOf(c), r.cycle);
        if (whyCycle !== null) this.fail('DeadlockReal', `${where}: deadlock answer ${JSON.stringify(r.cycle)} to ${JSON.stringify(c)}: ${whyCycle}`);
        if (!sameSet(edges, b.edges)) this.fail('DeadlockReal', `${where}: the deadlock refusal of ${JSON.stringify(c)} changed the wait-for graph`);
        this.counts.deadlockChecks++;
        if (first) this.counts.deadlocks++;
      }
    }
    const cycle = findCycle(edges);
    if (cycle !== null) this.fail('DeadlockReal', `${where}: a cycle persists in the wait-for graph: ${cycle.join(' → ')} → ${cycle[0]}`);
    this.before.set(nodeId, { sets: setViewsOf(fsm), view, edges });
  }
}

function sameSet(a: Set<string>, b: Set<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
