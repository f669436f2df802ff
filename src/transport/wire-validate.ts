// Decoding wire data into typed values. Everything that arrives from the network is
// `unknown` until it has passed through here; the functions below BUILD fresh objects from
// checked fields (never pass a decoded object through), so an unexpected key, a prototype
// trick or a msgpackr extension type can never reach the Raft core.
//
// This file checks SHAPES only: every field present and of its type, no unknown field,
// numbers exact, and the sizes that bound the work of decoding. Raft's protocol rules (a
// node id's limit, the incarnation format, contiguous entries, term order, "only index 0
// has term 0", a conf entry that decodes, members listed once) have one home:
// src/raft/core/message-check.ts, which RawNode.step runs on every message, so a message
// that breaks one is refused there, counted by reason and reported (docs/raft-core.md
// "Rules the core enforces"). The envelope's own routing fields (from, to) are checked here
// with the core's definition of a node id.
import { validNodeId } from '../raft/core/conf.js';
import type { ConfState, Entry, EntryKind, Message, NodeId, Snapshot, SnapshotMeta } from '../raft/core/types.js';

/** Upper bound for every term, index and counter on the wire. Well below
 *  Number.MAX_SAFE_INTEGER so that `term + 1` and `index + n` in the core stay exact:
 *  a peer that sends 2^53 - 1 would otherwise make the next campaign's term inexact. */
export const MAX_WIRE_NUMBER = 2 ** 52;
/** voters + learners (and bindings) in a snapshot's ConfState: bounds the decoding work */
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

/** a string; what it may contain is the core's rule (node ids, incarnations) */
export function str(o: Obj, key: string, path: string): string {
  const v = o[key];
  if (typeof v !== 'string') fail(`${path}.${key}`, `expected a string, got ${describe(v)}`);
  return v;
}

/** the envelope's sender and addressee: node ids as the core defines them (validNodeId) */
export function id(o: Obj, key: string, path: string): NodeId {
  const v = o[key];
  if (!validNodeId(v)) fail(`${path}.${key}`, `expected a node id (1-256 bytes), got ${describe(v)}`);
  return v;
}

/** bytes: copied into a plain Uint8Array so the result neither aliases the request body
 *  (a small entry must not pin a multi-MiB buffer) nor is a Buffer (deep-equal, purity) */
export function bytes(o: Obj, key: string, path: string): Uint8Array {
  const v = o[key];
  if (!(v instanceof Uint8Array)) fail(`${path}.${key}`, `expected bytes, got ${describe(v)}`);
  return new Uint8Array(v);
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

/** append entries, counted against the envelope's entry budget */
function entries(o: Obj, path: string, budget: { left: number }): Entry[] {
  const raw = array(o, 'entries', path, budget.left);
  budget.left -= raw.length;
  return raw.map((e, i) => entry(e, `${path}.entries[${i}]`));
}

function strings(o: Obj, key: string, path: string): string[] {
  return array(o, key, path, MAX_CONF_MEMBERS).map((v, i) => {
    if (typeof v !== 'string') fail(`${path}.${key}[${i}]`, `expected a string, got ${describe(v)}`);
    return v;
  });
}

export function confState(v: unknown, path: string): ConfState {
  const o = object(v, path, ['voters', 'learners', 'incarnations', 'clusterId']);
  const voters = strings(o, 'voters', path);
  const learners = strings(o, 'learners', path);
  if (voters.length + learners.length > MAX_CONF_MEMBERS) throw new WireError('too_large', `${path}: ${voters.length + learners.length} members, limit ${MAX_CONF_MEMBERS}`);
  let incarnations: Record<NodeId, string> | undefined;
  if (o['incarnations'] !== undefined) {
    const m = o['incarnations'];
    if (!isPlainObject(m)) fail(`${path}.incarnations`, `expected a map, got ${describe(m)}`);
    const keys = Object.keys(m);
    if (keys.length > MAX_CONF_MEMBERS) throw new WireError('too_large', `${path}.incarnations: ${keys.length} items, limit ${MAX_CONF_MEMBERS}`);
    incarnations = {};
    for (const k of keys) incarnations[k] = str(m, k, `${path}.incarnations`);
  }
  const clusterId = o['clusterId'] === undefined ? undefined : str(o, 'clusterId', path);
  return { voters, learners, ...(incarnations !== undefined ? { incarnations } : {}), ...(clusterId !== undefined ? { clusterId } : {}) };
}

export function snapshotMeta(v: unknown, path: string): SnapshotMeta {
  const o = object(v, path, ['index', 'term', 'conf']);
  return { index: num(o, 'index', path), term: num(o, 'term', path), conf: confState(o['conf'], `${path}.conf`) };
}

function snapshot(v: unknown, path: string): Snapshot {
  const o = object(v, path, ['meta', 'data']);
  return { meta: snapshotMeta(o['meta'], `${path}.meta`), data: bytes(o, 'data', path) };
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
 *  smuggle messages "from" another node) → a fresh Message of the right shape. */
export function message(v: unknown, path: string, from: NodeId, to: NodeId, budget: { left: number }): Message {
  if (!isPlainObject(v)) fail(path, `expected a map, got ${describe(v)}`);
  const type = v['type'];
  if (typeof type !== 'string' || !Object.hasOwn(FIELDS, type)) fail(`${path}.type`, `unknown message type ${describe(type)}`);
  const t = type as Message['type'];
  const o = object(v, path, ['type', 'term', ...FIELDS[t]]);
  const term = num(o, 'term', path);
  // Every message is written out field by field, never `{ ...common, type, … }`: Node 20's
  // V8, once the function is optimized, gives an object cloned by a spread and then given
  // new properties a hidden class of its own on every call, made in the old generation
  // (~400 B per message, kept until a full collection, and a runtime call each time).
  // BENCHMARKS.md "Tenth round"; test/transport/decode-gc.test.ts.
  switch (t) {
    case 'vote':
    case 'preVote': {
      const vote: Message = { from, to, term, type: t, lastIndex: num(o, 'lastIndex', path), lastTerm: num(o, 'lastTerm', path) };
      if (o['transfer'] !== undefined) vote.transfer = bool(o, 'transfer', path);
      if (o['bind'] !== undefined) vote.bind = str(o, 'bind', path);
      return vote;
    }
    case 'voteResp':
    case 'preVoteResp':
      return { from, to, term, type: t, reject: bool(o, 'reject', path) };
    case 'append':
      return { from, to, term, type: t, prevIndex: num(o, 'prevIndex', path), prevTerm: num(o, 'prevTerm', path), entries: entries(o, path, budget), commit: num(o, 'commit', path) };
    case 'appendResp': {
      const resp: Message = { from, to, term, type: t, index: num(o, 'index', path), reject: bool(o, 'reject', path), hint: num(o, 'hint', path), hintTerm: num(o, 'hintTerm', path) };
      if (o['lost'] !== undefined) resp.lost = bool(o, 'lost', path);
      return resp;
    }
    case 'heartbeat': {
      const hb: Message = { from, to, term, type: t, commit: num(o, 'commit', path), ctx: num(o, 'ctx', path) };
      if (o['match'] !== undefined) hb.match = num(o, 'match', path);
      return hb;
    }
    case 'heartbeatResp':
      return { from, to, term, type: t, ctx: num(o, 'ctx', path) };
    case 'snapshot':
      return { from, to, term, type: t, snapshot: snapshot(o['snapshot'], `${path}.snapshot`) };
    case 'timeoutNow':
      return { from, to, term, type: t };
  }
}
