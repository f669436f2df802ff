// A linearizability checker: the Wing–Gong–Lowe search as Porcupine implements it
// (anishathalye/porcupine checker.go): walk a doubly linked list of call/return entries
// sorted by time, try to linearize each pending call against a sequential model, lift it
// out of the list when it fits, backtrack at a return whose call could not be placed, and
// memoize (linearized set, model state) pairs already explored (Lowe's cache).
//
// Three additions over Porcupine's core loop:
// - the model may be nondeterministic (step returns every possible next state), which is
//   how indeterminate (`info`) operations are modelled: "it happened" and "it did not";
// - a step budget, so a pathological history yields `unknown` instead of a hang;
// - a hint for ops whose effect can wait for the end of their window (an indeterminate
//   acquire that may never have been applied: a no-op; the expiry of a session that holds
//   nothing). WGL tries every op at every point of its window, so k such ops pending at
//   once multiply the search by the 2^k ways of having taken some of them already, and a
//   long outage with a few dozen of them exhausts any budget. With the hint the checker
//   takes that outcome only when the walk reaches the op's return, where it is forced,
//   and tries the op earlier only with the outcomes that matter earlier.
//
// - a hint for ops that can change nothing any more (an indeterminate op of a session that
//   is known dead, the expiry of a grant that already ended): placed at once, as the
//   identity, so that the hundreds of them a 30-minute history keeps open do not make
//   every step of the walk pass over them.
//
// Operations with return time Infinity (Jepsen's info ops) sort after everything; they
// may be linearized at any point after their call.

export interface Model<S, I, O> {
  init(): S;
  /** Every state the model can be in after applying `input` with result `output` in
   *  state `s` (`output` undefined = unknown). Empty: the step is not legal. */
  step(s: S, input: I, output: O | undefined): S[];
  /** canonical text of a state, for the memo table */
  key(s: S): string;
  /** Search hint (optional): ops with an outcome that is never worse taken at the end of
   *  the op's window than earlier. */
  deferrable?(input: I, output: O | undefined): boolean;
  /** For a deferrable op in state `s`, whose step() outcomes are `outcomes`: `late`, the
   *  outcome to take when the walk reaches the op's return, and `early`, the outcomes still
   *  worth trying before. Both must be among `outcomes` (asserted). */
  defer?(s: S, input: I, output: O | undefined, outcomes: readonly S[]): { late: S; early: S[] };
  /** Search hint (optional): true when the op changes nothing in `s` nor in any state the
   *  search can reach from `s` (an indeterminate op of a session known dead; the expiry of
   *  a grant that already ended). The search places it at once, as the identity, instead
   *  of carrying it to every later point of its window; asserted against step(). */
  inert?(s: S, input: I, output: O | undefined): boolean;
}

export interface Operation<I, O> {
  input: I;
  /** undefined: the result is unknown (info) */
  output: O | undefined;
  call: number;
  /** Infinity for info */
  ret: number;
}

export type CheckResult<S> =
  | { result: 'ok'; steps: number }
  | { result: 'illegal'; steps: number; /** index (into the input array) of the op that could not be linearized */ stuckOp: number; /** ops linearized on the deepest path, in order */ deepest: number[]; /** model state at the deepest point */ state: S }
  | { result: 'unknown'; steps: number; reason: string; stuckOp: number; deepest: number[]; state: S };

interface Entry {
  kind: 0 | 1; // 0 call, 1 return (calls sort first at equal times)
  time: number;
  op: number;
  match: number; // call → its return entry index
  prev: number;
  next: number;
}

interface Frame<S> {
  entry: number;
  state: S;
  candidates: S[];
  tried: number;
  /** the op took its late outcome at its return entry: nothing else to try there */
  late: boolean;
}

/** 32-bit random words per op for incremental (Zobrist) hashing of the linearized set. */
function zobrist(n: number): Uint32Array {
  const z = new Uint32Array(2 * n);
  let x = 0x2545f491;
  for (let i = 0; i < z.length; i++) {
    // xorshift32: deterministic, no Math.random (replayable reports)
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    z[i] = x;
  }
  return z;
}

export function checkOperations<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[], opts: { maxSteps?: number } = {}): CheckResult<S> {
  const maxSteps = opts.maxSteps ?? 5_000_000;
  const n = ops.length;
  if (n === 0) return { result: 'ok', steps: 0 };
  // entries[0] is the head sentinel
  const raw: Omit<Entry, 'prev' | 'next' | 'match'>[] = [];
  for (let i = 0; i < n; i++) {
    const o = ops[i]!;
    if (!(o.ret >= o.call)) throw new Error(`wgl: operation ${i} returns (${o.ret}) before its call (${o.call})`);
    raw.push({ kind: 0, time: o.call, op: i }, { kind: 1, time: o.ret, op: i });
  }
  const deferrable = ops.map((o) => model.deferrable?.(o.input, o.output) === true && model.defer !== undefined);
  // at equal times: calls, then the returns of deferrable ops (so a deferred outcome is
  // taken before an op that returns at the same moment and may need it), then the rest
  const rank = (e: { kind: 0 | 1; op: number }): number => (e.kind === 0 ? 0 : deferrable[e.op] ? 1 : 2);
  raw.sort((a, b) => a.time - b.time || rank(a) - rank(b) || a.op - b.op);
  const entries: Entry[] = [{ kind: 0, time: -Infinity, op: -1, match: -1, prev: -1, next: 1 }];
  const retIndex = new Int32Array(n);
  raw.forEach((e, i) => {
    entries.push({ ...e, match: -1, prev: i, next: i + 2 <= raw.length ? i + 2 : -1 });
    if (e.kind === 1) retIndex[e.op] = i + 1;
  });
  const callIndex = new Int32Array(n);
  for (let i = 1; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.kind === 0) {
      e.match = retIndex[e.op]!;
      callIndex[e.op] = i;
    }
  }
  const z = zobrist(n);

  const lift = (i: number): void => {
    const e = entries[i]!;
    entries[e.prev]!.next = e.next;
    if (e.next !== -1) entries[e.next]!.prev = e.prev;
    const m = entries[e.match]!;
    entries[m.prev]!.next = m.next;
    if (m.next !== -1) entries[m.next]!.prev = m.prev;
  };
  const unlift = (i: number): void => {
    const e = entries[i]!;
    const m = entries[e.match]!;
    entries[m.prev]!.next = e.match;
    if (m.next !== -1) entries[m.next]!.prev = e.match;
    entries[e.prev]!.next = i;
    if (e.next !== -1) entries[e.next]!.prev = i;
  };

  const seen = new Set<string>();
  let hashHi = 0;
  let hashLo = 0;
  const stack: Frame<S>[] = [];
  let state = model.init();
  let entry = entries[0]!.next;
  let resumeFrom: Frame<S> | null = null;
  let steps = 0;
  let deepest: number[] = [];
  let deepestState = state;
  let stuckOp = -1;

  /** the outcomes of op i in state s, split for a deferrable op (checked against step) */
  const split = (i: number, s: S): { late: S | undefined; early: S[] } => {
    const o = ops[i]!;
    const all = model.step(s, o.input, o.output);
    if (!deferrable[i]) return { late: undefined, early: all };
    const d = model.defer!(s, o.input, o.output, all);
    const legal = new Set(all.map((x) => model.key(x)));
    for (const x of [d.late, ...d.early]) {
      if (!legal.has(model.key(x))) throw new Error(`wgl: the model's defer() for operation ${i} gives state ${model.key(x)}, which step() does not allow from ${model.key(s)}`);
    }
    return d;
  };
  /** mark (linearized set, state) as explored; false when it already was */
  const remember = (hi: number, lo: number, s: S): boolean => {
    const key = `${hi.toString(36)}.${lo.toString(36)}|${model.key(s)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  };
  const noteDepth = (): void => {
    if (stack.length > deepest.length) {
      deepest = stack.map((f) => entries[f.entry]!.op);
      deepestState = state;
      stuckOp = -1;
    }
  };

  while (entries[0]!.next !== -1) {
    if (++steps > maxSteps) return { result: 'unknown', steps, reason: `gave up after ${maxSteps} search steps`, stuckOp: stuckOp === -1 ? entries[entry]!.op : stuckOp, deepest, state: deepestState };
    const e = entries[entry]!;
    if (e.kind === 0 && resumeFrom === null && model.inert?.(state, ops[e.op]!.input, ops[e.op]!.output) === true) {
      // An op that can change nothing from here on: placing it now loses no linearization
      // (any order that places it later is the same sequence of states), and it no longer
      // multiplies the search by the points of a long window (docs/jepsen-lite.md "Checkers").
      const o = ops[e.op]!;
      const k = model.key(state);
      const outs = model.step(state, o.input, o.output);
      if (outs.length === 0 || outs.some((x) => model.key(x) !== k)) throw new Error(`wgl: the model calls operation ${e.op} inert in state ${k}, but step() gives ${outs.map((x) => model.key(x)).join(' | ') || 'no state'}`);
      const hi = (hashHi ^ z[2 * e.op]!) >>> 0;
      const lo = (hashLo ^ z[2 * e.op + 1]!) >>> 0;
      if (remember(hi, lo, state)) {
        stack.push({ entry, state, candidates: [], tried: 0, late: true });
        hashHi = hi;
        hashLo = lo;
        lift(entry);
        noteDepth();
        entry = entries[0]!.next;
      } else {
        entry = e.next;
      }
      continue;
    }
    if (e.kind === 0) {
      const candidates = resumeFrom ? resumeFrom.candidates : split(e.op, state).early;
      let k = resumeFrom ? resumeFrom.tried + 1 : 0;
      resumeFrom = null;
      const hi = (hashHi ^ z[2 * e.op]!) >>> 0;
      const lo = (hashLo ^ z[2 * e.op + 1]!) >>> 0;
      let placed = false;
      for (; k < candidates.length; k++) {
        const next = candidates[k]!;
        if (!remember(hi, lo, next)) continue;
        stack.push({ entry, state, candidates, tried: k, late: false });
        state = next;
        hashHi = hi;
        hashLo = lo;
        lift(entry);
        placed = true;
        break;
      }
      if (placed) {
        noteDepth();
        entry = entries[0]!.next;
      } else {
        entry = e.next;
      }
      continue;
    }
    // A return entry: its call was not placed before it on this path. A deferrable op
    // takes its late outcome here, at the last point of its window.
    const late = deferrable[e.op] ? split(e.op, state).late : undefined;
    if (late !== undefined) {
      const call = callIndex[e.op]!;
      const hi = (hashHi ^ z[2 * e.op]!) >>> 0;
      const lo = (hashLo ^ z[2 * e.op + 1]!) >>> 0;
      if (remember(hi, lo, late)) {
        stack.push({ entry: call, state, candidates: [], tried: 0, late: true });
        state = late;
        hashHi = hi;
        hashLo = lo;
        lift(call);
        noteDepth();
        entry = entries[0]!.next;
        continue;
      }
    }
    if (stack.length === deepest.length && stuckOp === -1) stuckOp = e.op;
    // backtrack to the last placement that has outcomes left to try
    let top: Frame<S> | undefined;
    do {
      top = stack.pop();
      if (!top) return { result: 'illegal', steps, stuckOp: stuckOp === -1 ? e.op : stuckOp, deepest, state: deepestState };
      const op = entries[top.entry]!.op;
      state = top.state;
      hashHi = (hashHi ^ z[2 * op]!) >>> 0;
      hashLo = (hashLo ^ z[2 * op + 1]!) >>> 0;
      unlift(top.entry);
    } while (top.late);
    entry = top.entry;
    resumeFrom = top; // try its remaining candidates, then move past it
  }
  return { result: 'ok', steps };
}
