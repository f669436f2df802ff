// The core's one trust boundary for peer messages, and the one home of Raft's protocol
// rules for them. RawNode.step runs every message through checkMessage before Raft sees
// it, so the simulator, the tests and every transport get the same check; a message it
// refuses is dropped there, counted by reason (RawNode.rejections) and reported to
// RaftConfig.onReject, and never reaches a handler. Behind it, Raft's handlers rely on
// the shape (fields present, of their type, indexes and terms natural numbers, entries
// contiguous) and assert what they depend on.
//
// What is checked is shape and self-consistency only: everything a correct peer's
// message satisfies whatever our state. Checks against our state (an ack beyond our
// log, a commit index beyond it) stay in the handlers, as ordinary Raft does.
//
// A transport decodes its wire format into typed values and checks their shapes and
// sizes only (src/transport/wire-validate.ts); every rule below lives here alone, and
// test/raft/message-check.test.ts tests each one.
import { decodeConfChange, validIncarnation, validNodeId } from './conf.js';
import type { ConfState, Entry, Message, NodeId, Snapshot } from './types.js';

/**
 * Why a message was refused:
 * - misaddressed: addressed to another node, or "from" this node itself;
 * - bad_header: the sender id, the term, the type or the incarnation is not valid;
 * - bad_field: a field of the message's type is missing or invalid (the detail names it).
 */
export type RejectReason = 'misaddressed' | 'bad_header' | 'bad_field';

export interface Rejection {
  reason: RejectReason;
  /** which field, and what was wrong with it */
  detail: string;
}

const isNat = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

const TYPES: ReadonlySet<string> = new Set<Message['type']>([
  'vote', 'preVote', 'voteResp', 'preVoteResp', 'append', 'appendResp', 'heartbeat', 'heartbeatResp', 'snapshot', 'timeoutNow',
]);

/** null when `m` may be stepped by node `self`, else why not */
export function checkMessage(m: Message, self: NodeId): Rejection | null {
  if (!isObject(m)) return { reason: 'bad_header', detail: 'not an object' };
  const u = m as unknown as Record<string, unknown>;
  if (u['to'] !== self) return { reason: 'misaddressed', detail: `addressed to ${String(u['to']).slice(0, 64)}` };
  if (u['from'] === self) return { reason: 'misaddressed', detail: 'from this node itself' };
  if (!validNodeId(u['from'])) return { reason: 'bad_header', detail: 'from: not a node id' };
  if (!isNat(u['term'])) return { reason: 'bad_header', detail: 'term: not a natural number' };
  if (typeof u['type'] !== 'string' || !TYPES.has(u['type'])) return { reason: 'bad_header', detail: 'type: unknown' };
  if (u['inc'] !== undefined && !validIncarnation(u['inc'])) return { reason: 'bad_header', detail: 'inc: not an incarnation' };
  const bad = checkFields(m);
  return bad === null ? null : { reason: 'bad_field', detail: `${m.type}: ${bad}` };
}

/** the fields of m's type; null when they are fine, else what is wrong */
function checkFields(m: Message): string | null {
  switch (m.type) {
    case 'vote':
    case 'preVote':
      if (!isNat(m.lastIndex)) return 'lastIndex: not a natural number';
      if (!isNat(m.lastTerm)) return 'lastTerm: not a natural number';
      // §5.2: a candidate's term exceeds the term of every entry in its log
      if (m.lastTerm > m.term) return `lastTerm ${m.lastTerm} above the message term ${m.term}`;
      if (m.transfer !== undefined && !isBool(m.transfer)) return 'transfer: not a boolean';
      if (m.bind !== undefined && !validIncarnation(m.bind)) return 'bind: not an incarnation';
      return null;
    case 'voteResp':
    case 'preVoteResp':
      return isBool(m.reject) ? null : 'reject: not a boolean';
    case 'append':
      return checkAppend(m);
    case 'appendResp':
      if (!isNat(m.index)) return 'index: not a natural number';
      if (!isBool(m.reject)) return 'reject: not a boolean';
      if (!isNat(m.hint)) return 'hint: not a natural number';
      if (!isNat(m.hintTerm)) return 'hintTerm: not a natural number';
      if (m.lost !== undefined && !(m.lost === true && m.reject === true)) return 'lost: only true, on a rejection';
      return null;
    case 'heartbeat':
      if (!isNat(m.commit)) return 'commit: not a natural number';
      if (m.match !== undefined && !(isNat(m.match) && m.match >= m.commit)) return 'match: not a natural number at or above commit';
      return isNat(m.ctx) ? null : 'ctx: not a natural number';
    case 'heartbeatResp':
      return isNat(m.ctx) ? null : 'ctx: not a natural number';
    case 'snapshot':
      return checkSnapshot(m.snapshot, m.term);
    case 'timeoutNow':
      return null;
  }
}

/** prevTerm not above the message term and 0 exactly at index 0, contiguous entries after
 *  prevIndex, terms never decreasing from prevTerm nor above the message term (Log
 *  Matching, §5.3: a correct leader sends nothing else), decodable conf entries (a conf
 *  entry takes effect once appended, thesis §4.1) */
function checkAppend(m: Extract<Message, { type: 'append' }>): string | null {
  if (!isNat(m.prevIndex)) return 'prevIndex: not a natural number';
  if (!isNat(m.prevTerm)) return 'prevTerm: not a natural number';
  if (m.prevTerm > m.term) return `prevTerm ${m.prevTerm} above the message term ${m.term}`;
  if (m.prevIndex === 0 && m.prevTerm !== 0) return `prevTerm ${m.prevTerm} at index 0: only index 0 has term 0`;
  if (!isNat(m.commit)) return 'commit: not a natural number';
  if (!Array.isArray(m.entries)) return 'entries: not an array';
  let prevTerm = m.prevTerm;
  for (let k = 0; k < m.entries.length; k++) {
    const bad = checkEntry(m.entries[k], m.prevIndex + 1 + k, prevTerm, m.term);
    if (bad !== null) return `entries[${k}]: ${bad}`;
    prevTerm = m.entries[k]!.term;
  }
  return null;
}

function checkEntry(e: Entry | undefined, index: number, prevTerm: number, msgTerm: number): string | null {
  if (!isObject(e)) return 'not an entry';
  if (e.index !== index) return `index ${String(e.index)}, expected ${index}`;
  if (!isNat(e.term)) return 'term: not a natural number';
  if (e.term < prevTerm || e.term > msgTerm) return `term ${e.term} outside [${prevTerm}, ${msgTerm}]`;
  if (!(e.data instanceof Uint8Array)) return 'data: not bytes';
  if (e.kind !== 'normal' && e.kind !== 'noop' && e.kind !== 'conf') return 'kind: unknown';
  if (e.kind === 'conf') {
    try {
      decodeConfChange(e.data);
    } catch {
      return 'conf entry does not decode';
    }
  }
  return null;
}

/** a snapshot at a positive index, of a term in [1, the message term] (only index 0 has
 *  term 0; a leader sends no snapshot of a term it has not reached) */
function checkSnapshot(s: Snapshot, msgTerm: number): string | null {
  if (!isObject(s) || !isObject(s.meta)) return 'snapshot: not a snapshot';
  const { index, term, conf } = s.meta;
  if (!isNat(index) || index === 0) return 'snapshot.meta.index: not a positive integer';
  if (!isNat(term)) return 'snapshot.meta.term: not a natural number';
  if (term === 0) return `snapshot.meta.term: 0 at index ${index}: only index 0 has term 0`;
  if (term > msgTerm) return `snapshot.meta.term: ${term} above the message term ${msgTerm}`;
  if (!(s.data instanceof Uint8Array)) return 'snapshot.data: not bytes';
  return checkConf(conf);
}

/** a configuration: voters and learners are node ids, each listed once (a duplicate would
 *  skew every quorum count), incarnations and the cluster id valid tokens */
function checkConf(conf: ConfState): string | null {
  if (!isObject(conf) || !Array.isArray(conf.voters) || !Array.isArray(conf.learners)) return 'snapshot.meta.conf: not a configuration';
  const seen = new Set<NodeId>();
  for (const id of [...conf.voters, ...conf.learners]) {
    if (!validNodeId(id)) return 'snapshot.meta.conf: a member is not a node id';
    if (seen.has(id)) return `snapshot.meta.conf: ${id.slice(0, 64)} listed twice`;
    seen.add(id);
  }
  if (conf.incarnations !== undefined) {
    if (!isObject(conf.incarnations)) return 'snapshot.meta.conf.incarnations: not a map';
    for (const [id, inc] of Object.entries(conf.incarnations)) {
      if (!validNodeId(id) || !validIncarnation(inc)) return 'snapshot.meta.conf.incarnations: not a map of node id to incarnation';
    }
  }
  if (conf.clusterId !== undefined && !validIncarnation(conf.clusterId)) return 'snapshot.meta.conf.clusterId: not a token';
  return null;
}
