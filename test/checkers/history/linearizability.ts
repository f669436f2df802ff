// Checker 1, linearizability of everything users call (docs/jepsen-lite.md "Checkers"):
// a history split per name — every lock (exclusive or shared), election and semaphore —
// each part searched (wgl.ts) against the reference model of the lock state machine
// (test/model/history-model.ts over test/model/lock-model.ts).
//
// Per name, the operations on it (acquires, releases, renewals, reads and checks; campaigns,
// proclaims, resignations and election reads; semaphore acquires, releases, resizes and
// reads; the nemesis's revocations) plus, for each session that touched it, its close and
// a synthetic `expire`: a session can end without any operation on this name (TTL expiry),
// so the expiry may happen anywhere from the call of its last successful operation (it was
// alive then) to the first answer that proved it dead (session_not_found, or its own
// close); Infinity when nobody saw it die. Likewise a grant asked with max_hold_ms gets a
// synthetic `expire-hold` from its acquire's call on: the service may end it by itself.
// The model lets these happen anywhere in their windows; the lease and election checkers
// hold the timing to the TTL and the max hold.
//
// Idempotency-Keys: the recorder's retries of one operation share its key, so a retry's
// answer is the operation's answer (the model sees one operation); a request sent under
// another request's key (input.reused_key) answered 422 is dropped here (nothing applied)
// and any other answer to it is keys.ts's violation. Keys span names, so the
// per-name model cannot hold the binding itself.
//
// Lock sets (acquire-all, release-all) touch several names at once, so the partitions are
// the connected components of names linked by set operations: a component is searched as
// one history against the model's acquireAll/releaseAll (a set granted whole or not at
// all), every per-name operation in it naming its name. A name no set touches is a
// partition of its own, as before.
import { ACQUIRES, type Op, type OpValue } from './history.js';
import { checkOperations, type CheckResult, type Operation } from './wgl.js';
import { historyModel, type Grant, type HistInput, type HistOutput, type HistState, type NameKind } from '../../model/history-model.js';
import { ELECTION_PREFIX, SEM_PREFIX } from './names.js';

export interface NamePartition {
  /** the partition's label: its name, or its names joined with '+' */
  name: string;
  /** the names it covers (one, or the lock names linked by sets), sorted */
  names: string[];
  kind: NameKind;
  /** partition-local session id (s0, s1, …) → the session's id */
  sessions: string[];
  ops: Operation<HistInput, HistOutput>[];
  /** the history op behind each partition op (undefined for synthetic ones) */
  source: (Op | undefined)[];
}

export function kindOf(name: string): NameKind {
  if (name.startsWith(SEM_PREFIX)) return 'semaphore';
  if (name.startsWith(ELECTION_PREFIX)) return 'election';
  return 'lock';
}

/** the history functions each kind's partition takes */
const FNS: Record<NameKind, ReadonlySet<string>> = {
  lock: new Set(['acquire', 'release', 'renew', 'read', 'check', 'revoke', 'acquire-all', 'release-all']),
  election: new Set(['campaign', 'proclaim', 'resign', 'el-read', 'revoke']),
  semaphore: new Set(['sem-acquire', 'sem-release', 'sem-read', 'sem-limit', 'revoke']),
};
const SETS = new Set(['acquire-all', 'release-all']);
const READS = new Set(['read', 'check', 'renew', 'el-read', 'sem-read']);

/** answers that prove the session is alive at the op's linearization point */
const aliveProof = (op: Op): boolean => op.type === 'ok' && ['acquire', 'release', 'renew', 'keepalive', 'close', 'campaign', 'proclaim', 'resign', 'sem-acquire', 'sem-release', 'acquire-all', 'release-all'].includes(op.f);
const deathProof = (op: Op): boolean => (op.type === 'fail' && op.output.code === 'session_not_found') || (op.type === 'ok' && op.f === 'close');

/** The window in which each session may have ended: [last call proving it alive, first answer proving it dead]. */
export function sessionLifetimes(ops: readonly Op[]): Map<string, { lastAlive: number; deadBy: number }> {
  const m = new Map<string, { lastAlive: number; deadBy: number }>();
  for (const op of ops) {
    const s = op.f === 'revoke' ? undefined : op.input.session ?? (op.f === 'open' && op.type === 'ok' ? op.output.session : undefined);
    if (!s) continue;
    const e = m.get(s) ?? { lastAlive: op.invoke, deadBy: Infinity };
    if (aliveProof(op) || op.f === 'open') e.lastAlive = Math.max(e.lastAlive, op.invoke);
    if (deathProof(op)) e.deadBy = Math.min(e.deadBy, op.complete);
    m.set(s, e);
  }
  return m;
}

function grantsOut(xs: readonly { session: string; token: number; permits?: number; mode?: 'exclusive' | 'shared' }[], idx: (s: string) => string): Grant[] {
  return xs.map((g) => ({ s: idx(g.session), token: g.token, ...(g.permits !== undefined ? { permits: g.permits } : {}), ...(g.mode !== undefined ? { mode: g.mode } : {}) }));
}

function toOutput(op: Op, idx: (s: string) => string): HistOutput | undefined {
  if (op.type === 'info') return undefined;
  const v: OpValue = op.output;
  const out: HistOutput = { type: op.type };
  if (v.code !== undefined) out.code = v.code;
  if (v.token !== undefined && v.token >= 0) out.token = v.token;
  if (v.current !== undefined) out.current = v.current;
  const read = op.f === 'read' || op.f === 'el-read';
  if (v.holder !== undefined) out.holder = idx(v.holder);
  else if (read && op.type === 'ok') out.holder = null;
  if (v.holder_token !== undefined) out.holderToken = v.holder_token;
  if (op.f === 'el-read' && v.text !== undefined) out.value = v.text;
  if (op.f === 'read' && op.type === 'ok' && v.grants !== undefined) out.grants = grantsOut(v.grants, idx);
  if (op.f === 'sem-read' && op.type === 'ok') {
    if (v.limit !== undefined && v.limit >= 0) out.limit = v.limit;
    if (v.in_use !== undefined && v.in_use >= 0) out.inUse = v.in_use;
    if (v.holders !== undefined) out.grants = grantsOut(v.holders, idx);
  }
  if (op.f === 'sem-acquire' && op.type === 'ok' && v.permits !== undefined && v.permits >= 0) out.permits = v.permits;
  // a refusal's limit in force, and a grant's (the limit it was granted under: a wait
  // outlives a resize, history-model.ts)
  if (op.f === 'sem-acquire' && v.limit !== undefined && v.limit >= 0) out.limit = v.limit;
  if (op.f === 'revoke' && op.type === 'ok') out.revoked = grantsOut(v.revoked ?? [], idx);
  if (op.f === 'acquire-all' && op.type === 'ok') out.set = (v.set ?? []).map((g) => ({ name: g.name, token: g.token }));
  if (op.f === 'release-all' && op.type === 'ok') out.released = [...(v.released ?? [])];
  return out;
}

function toInput(op: Op, s: string): HistInput {
  const i = op.input;
  const hold = i.max_hold_ms !== undefined ? { maxHoldMs: i.max_hold_ms } : {};
  switch (op.f) {
    case 'acquire':
      return { f: 'acquire', s, ...(i.mode === 'shared' ? { mode: 'shared' as const } : {}), ...hold };
    case 'acquire-all':
      return { f: 'acquire-all', s, names: [...(i.names ?? [])], ...hold };
    case 'release-all':
      return { f: 'release-all', s, names: [...(i.names ?? [])] };
    case 'campaign':
      return { f: 'campaign', s, value: i.text ?? '', ...hold };
    case 'sem-acquire':
      return { f: 'sem-acquire', s, permits: i.permits ?? 1, limit: i.limit ?? 1, ...hold };
    case 'release':
      return { f: 'release', s, ...(i.token !== undefined ? { token: i.token } : {}) };
    case 'sem-release':
      return { f: 'sem-release', s };
    case 'resign':
      return { f: 'resign', s };
    case 'proclaim':
      return { f: 'proclaim', s, value: i.text ?? '' };
    case 'renew':
      return { f: 'renew', s };
    case 'sem-limit':
      return { f: 'sem-limit', limit: i.limit ?? 1 };
    case 'check':
      return { f: 'check', token: i.token ?? -1 };
    case 'read':
    case 'el-read':
    case 'sem-read':
      return { f: 'read' };
    default:
      throw new Error(`linearizability: no model input for ${op.f}`);
  }
}

/** the names an op is on: a set's names, or its one name */
const namesOf = (op: Op): string[] => (SETS.has(op.f) ? [...(op.input.names ?? [])] : op.input.lock ? [op.input.lock] : []);

/** name → the component of lock names linked with it by set operations (its smallest name) */
function setComponents(ops: readonly Op[]): (name: string) => string {
  const parent = new Map<string, string>();
  const find = (n: string): string => {
    let r = n;
    while (parent.has(r) && parent.get(r) !== r) r = parent.get(r)!;
    if (r !== n) parent.set(n, r);
    return r;
  };
  for (const op of ops) {
    if (!SETS.has(op.f) || (op.type === 'fail' && op.output.code === 'idempotency_key_reused')) continue;
    const ns = namesOf(op).filter((n) => kindOf(n) === 'lock');
    for (const n of ns.slice(1)) {
      const a = find(ns[0]!);
      const b = find(n);
      if (a !== b) {
        if (a < b) parent.set(b, a);
        else parent.set(a, b);
      }
    }
  }
  return find;
}

export function partitionByName(ops: readonly Op[]): NamePartition[] {
  const lives = sessionLifetimes(ops);
  const component = setComponents(ops);
  const members = new Map<string, Set<string>>();
  for (const op of ops) for (const n of namesOf(op)) {
    const c = component(n);
    let xs = members.get(c);
    if (!xs) members.set(c, (xs = new Set()));
    xs.add(n);
  }
  const parts = new Map<string, NamePartition & { index: Map<string, string> }>();
  const part = (name: string): NamePartition & { index: Map<string, string> } => {
    const c = component(name);
    let p = parts.get(c);
    if (!p) {
      const names = [...(members.get(c) ?? [name])].sort();
      p = { name: names.join('+'), names, kind: kindOf(name), sessions: [], ops: [], source: [], index: new Map() };
      parts.set(c, p);
    }
    return p;
  };
  const indexer = (p: NamePartition & { index: Map<string, string> }) => (s: string): string => {
    let i = p.index.get(s);
    if (i === undefined) {
      i = `s${p.sessions.length}`;
      p.sessions.push(s);
      p.index.set(s, i);
    }
    return i;
  };
  for (const op of ops) {
    const opNames = namesOf(op);
    const name = opNames[0];
    if (!name) continue;
    const kind = kindOf(name);
    if (!FNS[kind].has(op.f)) continue;
    if (op.f === 'revoke' && (op.input.target === 'semaphore') !== (kind === 'semaphore')) continue;
    // an unknown read changes nothing: drop it (as Jepsen does)
    if (op.type === 'info' && READS.has(op.f)) continue;
    // a key reused for another request, refused: nothing applied, whatever the session's
    // state (the key is looked up before the command: docs/api.md "Idempotency"), so it
    // constrains nothing; what it might have changed anyway, later answers show
    if (op.type === 'fail' && op.output.code === 'idempotency_key_reused') continue;
    const p = part(name);
    const multi = p.names.length > 1;
    const idx = indexer(p);
    let out = toOutput(op, idx);
    let ret = op.complete;
    const session = op.f === 'revoke' ? undefined : op.input.session;
    // An acquire answered session_not_found may still have granted first (the grant, then
    // the expiry, then an idempotent retry that found the session gone): indeterminate.
    if (ACQUIRES.has(op.f) && out?.type === 'fail' && out.code === 'session_not_found') out = undefined;
    // An indeterminate op of a session cannot take effect after the session is known dead.
    if (out === undefined && session) ret = Math.max(op.invoke, lives.get(session)?.deadBy ?? Infinity);
    let input: HistInput;
    if (op.f === 'revoke') input = { f: 'revoke', ...(op.input.session !== undefined ? { s: idx(op.input.session) } : {}) };
    else input = toInput(op, session ? idx(session) : '');
    // in a partition of several names, a per-name operation says which
    if (multi && !SETS.has(op.f)) input = { ...input, name } as HistInput;
    p.ops.push({ input, output: out, call: op.invoke, ret });
    p.source.push(op);
    // the service may end a grant with a max hold by itself, any time after it was made
    if (ACQUIRES.has(op.f) && session && (op.input.max_hold_ms !== undefined || op.output.max_hold_ms !== undefined) && op.type !== 'fail') {
      const t = out?.token;
      for (const n of opNames) {
        const tn = op.f === 'acquire-all' ? out?.set?.find((g) => g.name === n)?.token : t;
        p.ops.push({ input: { f: 'expire-hold', s: idx(session), ...(tn !== undefined && tn >= 0 ? { token: tn } : {}), ...(multi ? { name: n } : {}) }, output: undefined, call: op.invoke, ret: lives.get(session)?.deadBy ?? Infinity });
        p.source.push(undefined);
      }
    }
  }
  // session ends: its own close (when it touched this partition) and the synthetic expiry
  for (const p of parts.values()) {
    const idx = indexer(p);
    const members = new Set(p.sessions);
    for (const op of ops) {
      if (op.f !== 'close' || !op.input.session || !members.has(op.input.session)) continue;
      const out = toOutput(op, idx);
      if (out?.type === 'ok' && Array.isArray(op.output.released)) out.released = op.output.released.filter((n) => p.names.includes(n));
      p.ops.push({ input: { f: 'close', s: idx(op.input.session) }, output: out, call: op.invoke, ret: op.complete });
      p.source.push(op);
    }
    for (const s of members) {
      const life = lives.get(s);
      if (!life) continue; // a session seen only as a holder in an answer: never alive for us
      // an alive proof after a death proof is a violation: let the model see it
      p.ops.push({ input: { f: 'expire', s: idx(s) }, output: undefined, call: Math.min(life.lastAlive, life.deadBy), ret: life.deadBy });
      p.source.push(undefined);
    }
  }
  for (const p of parts.values()) dropUngrantedAcquires(p);
  return [...parts.values()].map(({ index: _index, ...p }) => p).sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Drop the indeterminate acquires that a later close of the same session proves were never
 * granted. A close answered ok ended a live session and lists the locks it held; if it does
 * not list this name, a grant by the acquire would have had to end before the close, and
 * only the session's own release ends a hold while the session lives (a revocation or a
 * max hold too: not dropped when the name saw either). So when the close leaves the name
 * out and no release by the session could come after the acquire, the acquire did nothing.
 * The model would find the same by search, but only after trying the grant at every point
 * of a window that runs to the close, once per combination of the other pending
 * operations: the typical history after a crash (every client's acquire indeterminate,
 * every client closing its suspect session) made that exponential. A server that did grant
 * would still be caught: whatever observed the grant (a read, a lock_held answer) has
 * nothing left to explain it. Semaphores are not in a close's list: left to the search.
 */
function dropUngrantedAcquires(p: NamePartition): void {
  if (p.kind === 'semaphore') return;
  const endsOtherwise = p.ops.some((o) => o.input.f === 'revoke' || o.input.f === 'expire-hold');
  if (endsOtherwise) return;
  const nameOf = (x: HistInput): string => ('name' in x ? x.name : undefined) ?? p.names[0]!;
  const keep = p.ops.map((o, i) => {
    const a = o.input;
    if ((a.f !== 'acquire' && a.f !== 'campaign' && a.f !== 'acquire-all') || o.output !== undefined) return true;
    // a set is granted whole: one of its names left out of the close is enough
    const mine = a.f === 'acquire-all' ? a.names : [nameOf(a)];
    return !mine.some((n) => {
      const closedWithout = p.ops.some((c) => c.input.f === 'close' && c.input.s === a.s && c.output?.type === 'ok' && c.output.released !== undefined && !c.output.released.includes(n));
      if (!closedWithout) return false;
      const released = p.ops.some((r, j) => j !== i && 's' in r.input && r.input.s === a.s && r.ret >= o.call && (((r.input.f === 'release' || r.input.f === 'resign') && nameOf(r.input) === n) || (r.input.f === 'release-all' && r.input.names.includes(n))));
      return !released;
    });
  });
  p.ops = p.ops.filter((_, i) => keep[i]);
  p.source = p.source.filter((_, i) => keep[i]);
}

export interface LinearizabilityReport {
  valid: boolean | 'unknown';
  perLock: { lock: string; kind: NameKind; ops: number; result: CheckResult<HistState>['result']; steps: number; detail?: string }[];
}

export function checkLinearizable(ops: readonly Op[], opts: { maxSteps?: number } = {}): LinearizabilityReport {
  const perLock: LinearizabilityReport['perLock'] = [];
  let valid: boolean | 'unknown' = true;
  for (const p of partitionByName(ops)) {
    const r = checkOperations(historyModel(p.names, p.kind), p.ops, opts);
    const row: LinearizabilityReport['perLock'][number] = { lock: p.name, kind: p.kind, ops: p.ops.length, result: r.result, steps: r.steps };
    if (r.result === 'illegal') {
      valid = false;
      row.detail = explain(p, r);
    } else if (r.result === 'unknown') {
      if (valid === true) valid = 'unknown';
      row.detail = `${r.reason}\n${explain(p, r)}`;
    }
    perLock.push(row);
  }
  return { valid, perLock };
}

function explain(p: NamePartition, r: Extract<CheckResult<HistState>, { result: 'illegal' | 'unknown' }>): string {
  const name = (s: string | undefined): string => (s === undefined ? 'nobody' : (p.sessions[Number(s.slice(1))] ?? s).slice(0, 8));
  const describe = (i: number): string => {
    const o = p.ops[i]!;
    const src = p.source[i];
    const at = `[${o.call.toFixed(1)}, ${Number.isFinite(o.ret) ? o.ret.toFixed(1) : '∞'}]`;
    if (!src) return `${o.input.f}(${name((o.input as { s: string }).s)}) window ${at}`;
    return `${src.id} ${src.f} session=${(src.input.session ?? '').slice(0, 8)} ${JSON.stringify({ ...src.output, holder: src.output.holder?.slice(0, 8) })} ${src.type} ${at}`;
  };
  const st = r.state;
  const on = (n: string): string => (p.names.length > 1 ? ` on ${n}` : '');
  const grants = p.names.flatMap((n) => [...(st.m.locks.get(n)?.holders ?? []).map((h) => `${name(h.sid)}${h.mode === 'shared' ? ' (shared)' : ''} token ${h.token}${on(n)}`), ...(st.m.sems.get(n)?.holders ?? []).map((h) => `${name(h.sid)} ×${h.permits} token ${h.token}${on(n)}`)]);
  return [
    `${p.kind} ${p.name}: no linearization; the deepest one placed ${r.deepest.length} of ${p.ops.length} ops, ending with ${grants.length ? grants.join(', ') : 'no holder'}${st.placeholders.length ? ` (tokens ${st.placeholders.join(', ')} at least)` : ''}`,
    `  last ops placed:`,
    ...r.deepest.slice(-8).map(describe).map((l) => `    ${l}`),
    `  could not place: ${describe(r.stuckOp)}`,
  ].join('\n');
}
