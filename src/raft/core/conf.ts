// Membership changes, one server at a time (Raft thesis ch. 4): the ConfChange codec used
// for 'conf' log entries, the pure transition function, and the per-log history that lets
// a follower revert a configuration whose entry is truncated (thesis §4.1: "a server
// always uses the latest configuration in its log, regardless of whether it is committed").
import type { ConfChange, ConfChangeType, ConfState, Index, NodeId } from './types.js';

export class ConfChangeError extends Error {
  override readonly name = 'ConfChangeError';
}

const TYPES: readonly ConfChangeType[] = ['addVoter', 'addLearner', 'removeNode', 'bootstrap'];
/** incarnations and cluster ids: short printable tokens */
const TOKEN = /^[A-Za-z0-9._:#/-]{1,128}$/;
const MAX_BINDINGS = 1024;

export function validIncarnation(v: unknown): v is string {
  return typeof v === 'string' && TOKEN.test(v);
}
/** a node's own incarnation (RaftConfig.incarnation, the one its data directory stores) is
 *  at most 64 characters: half the token limit, room for a prefix a future format adds */
export const MAX_OWN_INCARNATION_LENGTH = 64;
export function validOwnIncarnation(v: unknown): v is string {
  return validIncarnation(v) && v.length <= MAX_OWN_INCARNATION_LENGTH;
}
const MAX_ID_BYTES = 256;
const MAX_CONTEXT_BYTES = 64 * 1024;

function toHex(b: Uint8Array): string {
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return s;
}
function fromHex(s: string): Uint8Array {
  if (s.length % 2 !== 0 || !/^[0-9a-f]*$/.test(s)) throw new ConfChangeError('conf change: context is not lowercase hex');
  const out = new Uint8Array(s.length / 2);
  for (let k = 0; k < out.length; k++) out[k] = parseInt(s.slice(2 * k, 2 * k + 2), 16);
  return out;
}

export function validNodeId(id: unknown): id is NodeId {
  return typeof id === 'string' && id.length > 0 && utf8Length(id, MAX_ID_BYTES) <= MAX_ID_BYTES;
}

/** The length of `s` in UTF-8 as TextEncoder writes it (a lone surrogate as U+FFFD, 3
 *  bytes), counted only until it passes `limit` (a longer string returns some length over
 *  it). Every message's `from` is checked with it, so it allocates nothing. */
export function utf8Length(s: string, limit = Infinity): number {
  let n = 0;
  for (let i = 0; i < s.length && n <= limit; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** UTF-8 JSON `{"type","nodeId","context"?: hex, "incarnation"?, "incarnations"?, "clusterId"?}`;
 *  stable field order so equal changes encode equally. A change without the incarnation
 *  fields encodes exactly as before they existed. */
export function encodeConfChange(cc: ConfChange): Uint8Array {
  if (!TYPES.includes(cc.type)) throw new ConfChangeError(`conf change: unknown type ${String(cc.type)}`);
  if (!validNodeId(cc.nodeId)) throw new ConfChangeError('conf change: nodeId must be a non-empty string of at most 256 bytes');
  const obj: Record<string, unknown> = { type: cc.type, nodeId: cc.nodeId };
  if (cc.context !== undefined) {
    if (cc.context.length > MAX_CONTEXT_BYTES) throw new ConfChangeError('conf change: context over 64 KiB');
    obj['context'] = toHex(cc.context);
  }
  checkIncarnationFields(cc);
  if (cc.incarnation !== undefined) obj['incarnation'] = cc.incarnation;
  if (cc.incarnations !== undefined) obj['incarnations'] = Object.fromEntries(Object.keys(cc.incarnations).sort().map((k) => [k, cc.incarnations![k]]));
  if (cc.clusterId !== undefined) obj['clusterId'] = cc.clusterId;
  return new TextEncoder().encode(JSON.stringify(obj));
}

function checkIncarnationFields(cc: ConfChange): void {
  if (cc.incarnation !== undefined && (cc.type !== 'addVoter' || !validIncarnation(cc.incarnation))) throw new ConfChangeError('conf change: incarnation is a token, on addVoter only');
  if (cc.type === 'bootstrap') {
    const b = cc.incarnations;
    if (b === undefined || typeof b !== 'object' || b === null || Array.isArray(b)) throw new ConfChangeError('conf change: bootstrap needs incarnations');
    const keys = Object.keys(b);
    if (keys.length > MAX_BINDINGS || !keys.every((k) => validNodeId(k) && validIncarnation(b[k]))) throw new ConfChangeError('conf change: incarnations must map node ids to tokens');
    if (!validIncarnation(cc.clusterId)) throw new ConfChangeError('conf change: bootstrap needs a clusterId token');
  } else if (cc.incarnations !== undefined || cc.clusterId !== undefined) {
    throw new ConfChangeError('conf change: incarnations and clusterId belong to bootstrap only');
  }
}

/** inverse of encodeConfChange; throws ConfChangeError naming the bad field */
export function decodeConfChange(bytes: Uint8Array): ConfChange {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new ConfChangeError('conf change: not UTF-8 JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ConfChangeError('conf change: not a JSON object');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!['type', 'nodeId', 'context', 'incarnation', 'incarnations', 'clusterId'].includes(k)) throw new ConfChangeError(`conf change: unknown field ${k}`);
  }
  if (!TYPES.includes(o['type'] as ConfChangeType)) throw new ConfChangeError('conf change: type must be addVoter, addLearner, removeNode or bootstrap');
  if (!validNodeId(o['nodeId'])) throw new ConfChangeError('conf change: nodeId must be a non-empty string of at most 256 bytes');
  const cc: ConfChange = { type: o['type'] as ConfChangeType, nodeId: o['nodeId'] };
  if (o['context'] !== undefined) {
    if (typeof o['context'] !== 'string') throw new ConfChangeError('conf change: context must be a hex string');
    cc.context = fromHex(o['context']);
  }
  if (o['incarnation'] !== undefined) cc.incarnation = o['incarnation'] as string;
  if (o['incarnations'] !== undefined) {
    const b = o['incarnations'];
    if (typeof b !== 'object' || b === null || Array.isArray(b)) throw new ConfChangeError('conf change: incarnations must be an object');
    cc.incarnations = { ...(b as Record<string, string>) };
  }
  if (o['clusterId'] !== undefined) cc.clusterId = o['clusterId'] as string;
  checkIncarnationFields(cc);
  return cc;
}

/**
 * The configuration after `cc`. Pure; never mutates `conf`. addVoter of a learner promotes
 * it; addLearner of a voter demotes it; adding a member twice or removing a stranger is a
 * no-op (the proposal side refuses the latter with 'unknown_node').
 */
export function applyConfChange(conf: ConfState, cc: ConfChange): ConfState {
  const voters = conf.voters.filter((v) => v !== cc.nodeId);
  const learners = conf.learners.filter((v) => v !== cc.nodeId);
  // a binding belongs to a voter: it goes when the node stops being one, and a promotion
  // names the incarnation it binds (docs/membership.md, "Incarnations")
  const inc = { ...(conf.incarnations ?? {}) };
  delete inc[cc.nodeId];
  const extra = (bindings: Record<NodeId, string> | undefined, clusterId = conf.clusterId): Pick<ConfState, 'incarnations' | 'clusterId'> => ({
    ...(bindings !== undefined && (Object.keys(bindings).length > 0 || conf.incarnations !== undefined) ? { incarnations: bindings } : {}),
    ...(clusterId !== undefined ? { clusterId } : {}),
  });
  switch (cc.type) {
    case 'addVoter': {
      const bound = conf.voters.includes(cc.nodeId) && cc.incarnation === undefined ? conf.incarnations : cc.incarnation !== undefined ? Object.assign({}, inc, { [cc.nodeId]: cc.incarnation }) : inc;
      return { voters: conf.voters.includes(cc.nodeId) ? [...conf.voters] : [...voters, cc.nodeId], learners, ...extra(bound === undefined ? undefined : { ...bound }) };
    }
    case 'addLearner':
      return { voters, learners: conf.learners.includes(cc.nodeId) ? [...conf.learners] : [...learners, cc.nodeId], ...extra(inc) };
    case 'removeNode':
      return { voters, learners, ...extra(inc) };
    case 'bootstrap':
      return { voters: [...conf.voters], learners: [...conf.learners], ...extra({ ...(conf.incarnations ?? {}), ...cc.incarnations }, cc.clusterId) };
  }
}

export function isMember(conf: ConfState, id: NodeId): boolean {
  return conf.voters.includes(id) || conf.learners.includes(id);
}

/**
 * The configurations carried by the conf entries of one log, above a base (the snapshot's
 * conf). `current()` is the latest; `truncateFrom(i)` forgets entries >= i (they were
 * overwritten by a new leader), which reverts to the configuration before them.
 */
export class ConfHistory {
  private base: ConfState;
  private changes: { index: Index; conf: ConfState }[] = [];

  constructor(base: ConfState) {
    this.base = base;
  }
  current(): ConfState {
    return this.changes[this.changes.length - 1]?.conf ?? this.base;
  }
  /** the configuration in force at log index `i` (the latest change at or below it), for
   *  any `i` at or above the base's index: e.g. the commit index, since history is only
   *  compacted up to the commit index */
  at(i: Index): ConfState {
    for (let k = this.changes.length - 1; k >= 0; k--) if (this.changes[k]!.index <= i) return this.changes[k]!.conf;
    return this.base;
  }
  /** index of the latest conf entry not yet known committed (0 when there is none) */
  lastIndex(): Index {
    return this.changes[this.changes.length - 1]?.index ?? 0;
  }
  record(index: Index, cc: ConfChange): void {
    this.changes.push({ index, conf: applyConfChange(this.current(), cc) });
  }
  truncateFrom(i: Index): boolean {
    const before = this.changes.length;
    this.changes = this.changes.filter((c) => c.index < i);
    return this.changes.length !== before;
  }
  /** forget history at or below `committed` (it can never be truncated), keeping the
   *  newest committed conf as the base: the history is only as long as the uncommitted
   *  tail. lastIndex() then reports 0 ("no uncommitted conf entry"), which is all its
   *  callers ask. */
  compactTo(committed: Index): void {
    while (this.changes.length > 0 && this.changes[0]!.index <= committed) this.base = this.changes.shift()!.conf;
  }
  reset(base: ConfState): void {
    this.base = base;
    this.changes = [];
  }
}
