// Field-by-field validation of decoded wire data. Everything that arrives from the
// network is `unknown` until it has passed through here; the functions below BUILD fresh
// objects from checked fields (never pass a decoded object through), so an unexpected
// key, a prototype trick or a msgpackr extension type can never reach the Raft core.
import type { ConfState, Entry, EntryKind, Message, NodeId, Snapshot, SnapshotMeta } from '../raft/core/types.js';

/** Upper bound for every term, index and counter on the wire. Well below
 *  Number.MAX_SAFE_INTEGER so that `term + 1` and `index + n` in the core stay exact:
 *  a peer that sends 2^53 - 1 would otherwise make the next campaign's term inexact. */
export const MAX_WIRE_NUMBER = 2 ** 52;
/** node ids and the cluster name: short printable strings (they end up in logs and metric labels) */
export const MAX_ID_LENGTH = 128;
/** voters + learners in a snapshot's ConfState */
export const MAX_CONF_MEMBERS = 1024;

export class WireError extends Error {
  override readonly name = 'WireError';
  constructor(
    readonly reason: 'bad_field' | 'too_large',
    detail: string,
  ) {
    super(detail);
  }
}

export function fail(path: string, why: string): never {
  throw new WireError('bad_field', `${path}: ${why}`);
}

export type Obj = Record<string, unknown>;

/** a msgpack map as msgpackr decodes it: a plain object. Anything else that comes out of
 *  the decoder as an object (Date, Set, Error, msgpackr's C1 marker, …) was not a map. */
export function isPlainObject(v: unknown): v is Obj {
  if (typeof v !== 'object' || v === null) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** a plain decoded map, with exactly the allowed keys (unknown keys are an error: the
 *  version byte, not silent extra fields, is how the format evolves) */
export function object(v: unknown, path: string, allowed: readonly string[]): Obj {
  if (!isPlainObject(v)) fail(path, `expected a map, got ${describe(v)}`);
  const o = v as Obj;
  for (const k of Object.keys(o)) if (!allowed.includes(k)) fail(path, `unexpected field ${JSON.stringify(k.slice(0, 40))}`);
  return o;
}

export function num(o: Obj, key: string, path: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > MAX_WIRE_NUMBER) {
    fail(`${path}.${key}`, `expected an integer in [0, 2^52], got ${describe(v)}`);
  }
  return v;
}

export function bool(o: Obj, key: string, path: string): boolean {
  const v = o[key];
  if (typeof v !== 'boolean') fail(`${path}.${key}`, `expected a boolean, got ${describe(v)}`);
  return v;
}

export function id(o: Obj, key: string, path: string): NodeId {
  return idValue(o[key], `${path}.${key}`);
}

function idValue(v: unknown, path: string): NodeId {
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_ID_LENGTH) {
    fail(path, `expected a string of 1-${MAX_ID_LENGTH} characters, got ${describe(v)}`);
  }
  return v;
}

/** bytes: copied into a plain Uint8Array so the result neither aliases the request body
 *  (a small entry must not pin a multi-MiB buffer) nor is a Buffer (deep-equal, purity) */
export function bytes(o: Obj, key: string, path: string): Uint8Array {
  const v = o[key];
  if (!(v instanceof Uint8Array)) fail(`${path}.${key}`, `expected bytes, got ${describe(v)}`);
  return new Uint8Array(v);
}

/** incarnations and cluster ids (docs/membership.md, "Incarnations") */
const TOKEN = /^[A-Za-z0-9._:#/-]{1,128}$/;

export function token(o: Obj, key: string, path: string): string {
  const v = o[key];
  if (typeof v !== 'string' || !TOKEN.test(v)) fail(`${path}.${key}`, `expected 1-128 of [A-Za-z0-9._:#/-], got ${describe(v)}`);
  return v;
}

export function array(o: Obj, key: string, path: string, max: number): unknown[] {
  const v = o[key];
  if (!Array.isArray(v)) fail(`${path}.${key}`, `expected an array, got ${describe(v)}`);
  if (v.length > max) throw new WireError('too_large', `${path}.${key}: ${v.length} items, limit ${max}`);
  return v;
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v instanceof Uint8Array) return `bytes(${v.length})`;
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `string(${v.length})`;
  if (typeof v === 'number') return String(v);
  if (typeof v === 'object') return v.constructor?.name ?? 'an object';
  return typeof v;
}

const ENTRY_KINDS: readonly EntryKind[] = ['normal', 'noop', 'conf'];

function entry(v: unknown, path: string): Entry {
  const o = object(v, path, ['index', 'term', 'kind', 'data']);
  const kind = o['kind'];
  if (typeof kind !== 'string' || !(ENTRY_KINDS as readonly string[]).includes(kind)) {
    fail(`${path}.kind`, `expected one of ${ENTRY_KINDS.join('|')}, got ${describe(kind)}`);
  }
  return { index: num(o, 'index', path), term: num(o, 'term', path), kind: kind as EntryKind, data: bytes(o, 'data', path) };
}

/** append entries: contiguous after prevIndex, terms non-decreasing from prevTerm and
 *  never above the message term (Log Matching, Raft §5.3: a correct leader cannot send
 *  anything else, so anything else is corruption or an impostor) */
function entries(o: Obj, path: string, term: number, prevIndex: number, prevTerm: number, budget: { left: number }): Entry[] {
  const raw = array(o, 'entries', path, budget.left);
  budget.left -= raw.length;
  const out: Entry[] = [];
  let lastTerm = prevTerm;
  for (let i = 0; i < raw.length; i++) {
    const p = `${path}.entries[${i}]`;
    const e = entry(raw[i], p);
    if (e.index !== prevIndex + 1 + i) fail(`${p}.index`, `expected ${prevIndex + 1 + i} (contiguous after prevIndex ${prevIndex}), got ${e.index}`);
    if (e.term < lastTerm) fail(`${p}.term`, `term ${e.term} below the previous entry's term ${lastTerm}`);
    if (e.term > term) fail(`${p}.term`, `term ${e.term} above the message term ${term}`);
    lastTerm = e.term;
    out.push(e);
  }
  return out;
}

function idList(o: Obj, key: string, path: string): NodeId[] {
  return array(o, key, path, MAX_CONF_MEMBERS).map((v, i) => idValue(v, `${path}.${key}[${i}]`));
}

export function confState(v: unknown, path: string): ConfState {
  const o = object(v, path, ['voters', 'learners', 'incarnations', 'clusterId']);
  const voters = idList(o, 'voters', path);
  const learners = idList(o, 'learners', path);
  let incarnations: Record<NodeId, string> | undefined;
  if (o['incarnations'] !== undefined) {
    const m = o['incarnations'];
    if (!isPlainObject(m)) fail(`${path}.incarnations`, `expected a map, got ${describe(m)}`);
    const keys = Object.keys(m);
    if (keys.length > MAX_CONF_MEMBERS) throw new WireError('too_large', `${path}.incarnations: ${keys.length} items, limit ${MAX_CONF_MEMBERS}`);
    incarnations = {};
    for (const k of keys) incarnations[idValue(k, `${path}.incarnations key`)] = token(m, k, `${path}.incarnations`);
  }
  const clusterId = o['clusterId'] === undefined ? undefined : token(o, 'clusterId', path);
  // a node is a voter or a learner, once: duplicates would skew quorum arithmetic
  const seen = new Set<NodeId>();
  for (const n of [...voters, ...learners]) {
    if (seen.has(n)) fail(path, `node ${JSON.stringify(n)} listed twice`);
    seen.add(n);
  }
  if (seen.size > MAX_CONF_MEMBERS) throw new WireError('too_large', `${path}: ${seen.size} members, limit ${MAX_CONF_MEMBERS}`);
  return { voters, learners, ...(incarnations !== undefined ? { incarnations } : {}), ...(clusterId !== undefined ? { clusterId } : {}) };
}

export function snapshotMeta(v: unknown, path: string, term: number): SnapshotMeta {
  const o = object(v, path, ['index', 'term', 'conf']);
  const meta = { index: num(o, 'index', path), term: num(o, 'term', path), conf: confState(o['conf'], `${path}.conf`) };
  if (meta.term > term) fail(`${path}.term`, `snapshot term ${meta.term} above the message term ${term}`);
  if ((meta.index === 0) !== (meta.term === 0)) fail(path, `index ${meta.index} with term ${meta.term}: only index 0 has term 0`);
  return meta;
}

function snapshot(v: unknown, path: string, term: number): Snapshot {
  const o = object(v, path, ['meta', 'data']);
  return { meta: snapshotMeta(o['meta'], `${path}.meta`, term), data: bytes(o, 'data', path) };
}

const FIELDS: Record<Message['type'], readonly string[]> = {
  // transfer: optional, set on the votes of a leadership transfer (types.ts); without it
  // here a transfer's votes are refused and the transfer falls back to a full election
  // bind: optional, the incarnation the candidate's log binds the addressee to (types.ts)
  vote: ['lastIndex', 'lastTerm', 'transfer', 'bind'],
  preVote: ['lastIndex', 'lastTerm', 'transfer', 'bind'],
  voteResp: ['reject'],
  preVoteResp: ['reject'],
  append: ['prevIndex', 'prevTerm', 'entries', 'commit'],
  // lost: optional, a follower's log no longer reaches what it acknowledged (types.ts)
  appendResp: ['index', 'reject', 'hint', 'hintTerm', 'lost'],
  // match: optional, only while the leader doubts the follower's log (types.ts)
  heartbeat: ['commit', 'ctx', 'match'],
  heartbeatResp: ['ctx'],
  snapshot: ['snapshot'],
  timeoutNow: [],
};

export const MESSAGE_TYPES = Object.keys(FIELDS) as Message['type'][];

/** One wire message (without from/to: those come from the envelope, so a batch cannot
 *  smuggle messages "from" another node) → a fresh, fully checked Message. */
export function message(v: unknown, path: string, from: NodeId, to: NodeId, budget: { left: number }): Message {
  if (!isPlainObject(v)) fail(path, `expected a map, got ${describe(v)}`);
  const type = v['type'];
  if (typeof type !== 'string' || !Object.hasOwn(FIELDS, type)) fail(`${path}.type`, `unknown message type ${describe(type)}`);
  const t = type as Message['type'];
  const o = object(v, path, ['type', 'term', ...FIELDS[t]]);
  const term = num(o, 'term', path);
  const h = { from, to, term };
  switch (t) {
    case 'vote':
    case 'preVote': {
      const lastTerm = num(o, 'lastTerm', path);
      // §5.2: a candidate's term exceeds the term of every entry in its log
      if (lastTerm > term) fail(`${path}.lastTerm`, `${lastTerm} above the message term ${term}`);
      const vote: Message = { ...h, type: t, lastIndex: num(o, 'lastIndex', path), lastTerm };
      if (o['transfer'] !== undefined) vote.transfer = bool(o, 'transfer', path);
      if (o['bind'] !== undefined) vote.bind = token(o, 'bind', path);
      return vote;
    }
    case 'voteResp':
    case 'preVoteResp':
      return { ...h, type: t, reject: bool(o, 'reject', path) };
    case 'append': {
      const prevIndex = num(o, 'prevIndex', path);
      const prevTerm = num(o, 'prevTerm', path);
      if (prevTerm > term) fail(`${path}.prevTerm`, `${prevTerm} above the message term ${term}`);
      if (prevIndex === 0 && prevTerm !== 0) fail(`${path}.prevTerm`, `index 0 has term 0, got ${prevTerm}`);
      const es = entries(o, path, term, prevIndex, prevTerm, budget);
      if (prevIndex + es.length > MAX_WIRE_NUMBER) fail(`${path}.entries`, 'last index out of range');
      return { ...h, type: t, prevIndex, prevTerm, entries: es, commit: num(o, 'commit', path) };
    }
    case 'appendResp': {
      const resp: Message = { ...h, type: t, index: num(o, 'index', path), reject: bool(o, 'reject', path), hint: num(o, 'hint', path), hintTerm: num(o, 'hintTerm', path) };
      if (o['lost'] !== undefined) resp.lost = bool(o, 'lost', path);
      return resp;
    }
    case 'heartbeat': {
      const hb: Message = { ...h, type: t, commit: num(o, 'commit', path), ctx: num(o, 'ctx', path) };
      if (o['match'] !== undefined) hb.match = num(o, 'match', path);
      return hb;
    }
    case 'heartbeatResp':
      return { ...h, type: t, ctx: num(o, 'ctx', path) };
    case 'snapshot':
      return { ...h, type: t, snapshot: snapshot(o['snapshot'], `${path}.snapshot`, term) };
    case 'timeoutNow':
      return { ...h, type: t };
  }
}
