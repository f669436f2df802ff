// The peer wire format: one leading VERSION byte, then one msgpack value.
//
//   messages body  = VERSION, msgpack { cluster, from, to, messages: WireMessage[], inc?, cid? }
//
// inc: the sender's incarnation, cid: its cluster id (docs/membership.md, "Incarnations"),
// both optional: a node without a cluster id yet (a brand-new or blank one) sends none.
//   snapshot chunk = VERSION, msgpack { cluster, from, to, transfer, offset, total, term, meta, chunk }
//
// A WireMessage is a Message without from/to (the envelope's pair applies to all of them).
// msgpackr runs with explicit options: plain maps (no records: records need shared
// structure state between sender and receiver, which a stateless HTTP request does not
// have), no structured clone, no extra types; Uint8Array travels as msgpack `bin`.
// Decoding checks the shape of everything (wire-validate.ts) and returns a value, never
// throws; Raft's protocol rules are the core's (src/raft/core/message-check.ts).
import { Packr, Unpackr } from 'msgpackr';
import type { Message, NodeId, SnapshotMeta } from '../raft/core/types.js';
import { WireError, array, bytes, describe, id, isPlainObject, message, num, object, snapshotMeta, str, type Obj } from './wire-validate.js';

/** Bump on any incompatible change; a receiver rejects every other value ('version'). */
export const WIRE_VERSION = 1;

export type RejectReason = 'malformed' | 'version' | 'cluster' | 'unknown_peer' | 'bad_field' | 'too_large';
export type DecodeFailure = { ok: false; reason: RejectReason; detail: string };

export interface Envelope {
  cluster: string;
  from: NodeId;
  to: NodeId;
  messages: readonly Message[];
  /** the sender's cluster id, once it has one */
  clusterId?: string;
}

/** One piece of a snapshot in transit (see http-transport.ts, "snapshots"). */
export interface SnapshotChunk {
  cluster: string;
  from: NodeId;
  to: NodeId;
  /** sender-chosen id of this transfer; a new id from the same peer supersedes the old */
  transfer: string;
  /** byte offset of `chunk` in the snapshot data, and the data's total length */
  offset: number;
  total: number;
  /** term of the snapshot Message */
  term: number;
  meta: SnapshotMeta;
  chunk: Uint8Array;
}

export interface DecodeOptions {
  cluster: string;
  self: NodeId;
  /** is this node id a member we talk to? */
  knownPeers: ReadonlySet<NodeId> | ReadonlyMap<NodeId, unknown>;
  /** total entries over all append messages of one envelope */
  maxEntries: number;
  /** body size limit in bytes (the HTTP layer enforces it too, while reading) */
  maxBytes: number;
  /** messages per envelope (default 10,000) */
  maxMessages?: number;
  /** this node's cluster id, once it has one: an envelope naming another is refused */
  clusterId?: () => string | undefined;
}

export interface ChunkDecodeOptions extends Omit<DecodeOptions, 'maxEntries' | 'maxMessages'> {
  /** limit on `total` */
  maxSnapshotBytes: number;
}

const packr = new Packr({
  useRecords: false,
  structuredClone: false,
  moreTypes: false,
  bundleStrings: false,
  encodeUndefinedAsNil: false,
  variableMapSize: true,
});
const unpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: true,
  structuredClone: false,
  moreTypes: false,
  int64AsType: 'number',
});

/** msgpackr's pack() returns a view into a reused buffer: copying behind the version byte
 *  gives every body its own memory, so queued bodies are never overwritten. */
function frame(value: unknown): Uint8Array {
  const packed = packr.pack(value);
  const out = new Uint8Array(packed.length + 1);
  out[0] = WIRE_VERSION;
  out.set(packed, 1);
  return out;
}

function toWire(m: Message): Obj {
  const { from: _from, to: _to, inc: _inc, ...rest } = m;
  return rest;
}

export function encodeEnvelope(env: Envelope): Uint8Array {
  for (const m of env.messages) {
    // the transport groups by destination; a mismatch here is a bug, not bad input
    if (m.from !== env.from || m.to !== env.to) throw new Error(`assert: message ${m.from}->${m.to} in envelope ${env.from}->${env.to}`);
  }
  const inc = env.messages[0]?.inc;
  return frame({
    cluster: env.cluster, from: env.from, to: env.to, messages: env.messages.map(toWire),
    ...(inc !== undefined ? { inc } : {}), ...(env.clusterId !== undefined ? { cid: env.clusterId } : {}),
  });
}

export function encodeSnapshotChunk(c: SnapshotChunk): Uint8Array {
  return frame({ cluster: c.cluster, from: c.from, to: c.to, transfer: c.transfer, offset: c.offset, total: c.total, term: c.term, meta: c.meta, chunk: c.chunk });
}

/** version byte + one msgpack map, nothing after it */
function unframe(body: Uint8Array, maxBytes: number): { ok: true; value: unknown } | DecodeFailure {
  if (body.length > maxBytes) return { ok: false, reason: 'too_large', detail: `body of ${body.length} bytes, limit ${maxBytes}` };
  if (body.length < 2) return { ok: false, reason: 'malformed', detail: `body of ${body.length} bytes is too short` };
  if (body[0] !== WIRE_VERSION) return { ok: false, reason: 'version', detail: `wire version ${body[0]}, this node speaks ${WIRE_VERSION}` };
  let values: unknown[];
  try {
    values = unpackr.unpackMultiple(body.subarray(1)) as unknown[];
  } catch (err) {
    return { ok: false, reason: 'malformed', detail: `undecodable msgpack: ${(err as Error)?.message ?? String(err)}`.slice(0, 200) };
  }
  if (!Array.isArray(values) || values.length !== 1) return { ok: false, reason: 'malformed', detail: `expected one msgpack value, got ${Array.isArray(values) ? values.length : 'none'}` };
  const value = values[0];
  if (!isPlainObject(value)) {
    return { ok: false, reason: 'malformed', detail: `expected a msgpack map, got ${describe(value)}` };
  }
  return { ok: true, value };
}

/** cluster, sender and addressee, in the order that gives the most useful reason */
function checkRoute(o: Obj, opts: DecodeOptions | ChunkDecodeOptions): { from: NodeId; to: NodeId } | DecodeFailure {
  const cluster = o['cluster'];
  if (cluster !== opts.cluster) return { ok: false, reason: 'cluster', detail: `cluster ${typeof cluster === 'string' ? JSON.stringify(cluster.slice(0, 64)) : describe(cluster)}, expected ${JSON.stringify(opts.cluster)}` };
  const from = id(o, 'from', 'envelope');
  const to = id(o, 'to', 'envelope');
  if (from === opts.self || !opts.knownPeers.has(from)) return { ok: false, reason: 'unknown_peer', detail: `sender ${JSON.stringify(from)} is not a known peer` };
  if (to !== opts.self) return { ok: false, reason: 'unknown_peer', detail: `addressed to ${JSON.stringify(to)}, this node is ${JSON.stringify(opts.self)}` };
  return { from, to };
}

function guard<T>(fn: () => T | DecodeFailure): T | DecodeFailure {
  try {
    return fn();
  } catch (err) {
    if (err instanceof WireError) return { ok: false, reason: err.reason, detail: err.message };
    // anything else escaping validation is a bug in this file, but it must still never
    // take the node down on input from the network
    return { ok: false, reason: 'malformed', detail: `unexpected: ${String(err)}`.slice(0, 200) };
  }
}

export function decodeEnvelope(body: Uint8Array, opts: DecodeOptions): { ok: true; from: NodeId; messages: Message[] } | DecodeFailure {
  const framed = unframe(body, opts.maxBytes);
  if (!framed.ok) return framed;
  return guard(() => {
    const o = object(framed.value, 'envelope', ['cluster', 'from', 'to', 'messages', 'inc', 'cid']);
    const route = checkRoute(o, opts);
    if ('ok' in route) return route;
    const cid = o['cid'] === undefined ? undefined : str(o, 'cid', 'envelope');
    const mine = opts.clusterId?.();
    // another cluster incarnation (its own bootstrap, or a restore): never let it vote or append here
    if (cid !== undefined && mine !== undefined && cid !== mine) return { ok: false as const, reason: 'cluster' as const, detail: `cluster id ${JSON.stringify(cid)}, this node's is ${JSON.stringify(mine)}` };
    // its format is the core's rule (message-check.ts refuses a bad one, bad_header)
    const inc = o['inc'] === undefined ? undefined : str(o, 'inc', 'envelope');
    const raw = array(o, 'messages', 'envelope', opts.maxMessages ?? 10_000);
    const budget = { left: opts.maxEntries };
    const messages = raw.map((m, i) => {
      const msg = message(m, `messages[${i}]`, route.from, route.to, budget);
      if (inc !== undefined) msg.inc = inc;
      return msg;
    });
    return { ok: true as const, from: route.from, messages };
  });
}

const TRANSFER_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function decodeSnapshotChunk(body: Uint8Array, opts: ChunkDecodeOptions): { ok: true; chunk: SnapshotChunk } | DecodeFailure {
  const framed = unframe(body, opts.maxBytes);
  if (!framed.ok) return framed;
  return guard(() => {
    const o = object(framed.value, 'chunk', ['cluster', 'from', 'to', 'transfer', 'offset', 'total', 'term', 'meta', 'chunk']);
    const route = checkRoute(o, opts);
    if ('ok' in route) return route;
    const transfer = o['transfer'];
    if (typeof transfer !== 'string' || !TRANSFER_ID.test(transfer)) return { ok: false, reason: 'bad_field', detail: `chunk.transfer: expected 1-64 of [A-Za-z0-9_-], got ${describe(transfer)}` };
    const offset = num(o, 'offset', 'chunk');
    const total = num(o, 'total', 'chunk');
    const term = num(o, 'term', 'chunk');
    if (total > opts.maxSnapshotBytes) return { ok: false, reason: 'too_large', detail: `snapshot of ${total} bytes, limit ${opts.maxSnapshotBytes}` };
    const chunk = bytes(o, 'chunk', 'chunk');
    if (offset + chunk.length > total) return { ok: false, reason: 'bad_field', detail: `chunk [${offset}, ${offset + chunk.length}) beyond total ${total}` };
    if (chunk.length === 0 && total !== 0) return { ok: false, reason: 'bad_field', detail: 'empty chunk' };
    const meta = snapshotMeta(o['meta'], 'chunk.meta');
    return { ok: true as const, chunk: { cluster: opts.cluster, from: route.from, to: route.to, transfer, offset, total, term, meta, chunk } };
  });
}
