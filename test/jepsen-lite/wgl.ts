// A linearizability checker: the Wing–Gong–Lowe search as Porcupine implements it
// (anishathalye/porcupine checker.go): walk a doubly linked list of call/return entries
// sorted by time, try to linearize each pending call against a sequential model, lift it
// out of the list when it fits, backtrack at a return whose call could not be placed, and
// memoize (linearized set, model state) pairs already explored (Lowe's cache).
//
// Two additions over Porcupine's core loop:
// - the model may be nondeterministic (step returns every possible next state), which is
//   how indeterminate (`info`) operations are modelled: "it happened" and "it did not";
// - a step budget, so a pathological history yields `unknown` instead of a hang.
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
  raw.sort((a, b) => a.time - b.time || a.kind - b.kind || a.op - b.op);
  const entries: Entry[] = [{ kind: 0, time: -Infinity, op: -1, match: -1, prev: -1, next: 1 }];
  const retIndex = new Int32Array(n);
  raw.forEach((e, i) => {
    entries.push({ ...e, match: -1, prev: i, next: i + 2 <= raw.length ? i + 2 : -1 });
    if (e.kind === 1) retIndex[e.op] = i + 1;
  });
  for (let i = 1; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.kind === 0) e.match = retIndex[e.op]!;
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

  while (entries[0]!.next !== -1) {
    if (++steps > maxSteps) return { result: 'unknown', steps, reason: `gave up after ${maxSteps} search steps`, stuckOp: stuckOp === -1 ? entries[entry]!.op : stuckOp, deepest, state: deepestState };
    const e = entries[entry]!;
    if (e.kind === 0) {
      const op = ops[e.op]!;
      const candidates = resumeFrom ? resumeFrom.candidates : model.step(state, op.input, op.output);
      let k = resumeFrom ? resumeFrom.tried + 1 : 0;
      resumeFrom = null;
      const hi = (hashHi ^ z[2 * e.op]!) >>> 0;
      const lo = (hashLo ^ z[2 * e.op + 1]!) >>> 0;
      let placed = false;
      for (; k < candidates.length; k++) {
        const next = candidates[k]!;
        const key = `${hi.toString(36)}.${lo.toString(36)}|${model.key(next)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        stack.push({ entry, state, candidates, tried: k });
        state = next;
        hashHi = hi;
        hashLo = lo;
        lift(entry);
        placed = true;
        break;
      }
      if (placed) {
        if (stack.length > deepest.length) {
          deepest = stack.map((f) => entries[f.entry]!.op);
          deepestState = state;
          stuckOp = -1;
        }
        entry = entries[0]!.next;
      } else {
        entry = e.next;
      }
      continue;
    }
    // a return entry: its call could not be placed before it on this path
    if (stack.length === deepest.length && stuckOp === -1) stuckOp = e.op;
    const top = stack.pop();
    if (!top) return { result: 'illegal', steps, stuckOp: stuckOp === -1 ? e.op : stuckOp, deepest, state: deepestState };
    const op = entries[top.entry]!.op;
    state = top.state;
    hashHi = (hashHi ^ z[2 * op]!) >>> 0;
    hashLo = (hashLo ^ z[2 * op + 1]!) >>> 0;
    unlift(top.entry);
    entry = top.entry;
    resumeFrom = top; // try its remaining candidates, then move past it
  }
  return { result: 'ok', steps };
}
