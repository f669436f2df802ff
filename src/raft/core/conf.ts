// Membership changes, one server at a time (Raft thesis ch. 4): the ConfChange codec used
// for 'conf' log entries, the pure transition function, and the per-log history that lets
// a follower revert a configuration whose entry is truncated (thesis §4.1: "a server
// always uses the latest configuration in its log, regardless of whether it is committed").
import type { ConfChange, ConfChangeType, ConfState, Index, NodeId } from './types.js';

export class ConfChangeError extends Error {}

const TYPES: readonly ConfChangeType[] = ['addVoter', 'addLearner', 'removeNode'];
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
  return typeof id === 'string' && id.length > 0 && new TextEncoder().encode(id).length <= MAX_ID_BYTES;
}

/** UTF-8 JSON `{"type","nodeId","context"?: hex}`; stable field order so equal changes encode equally */
export function encodeConfChange(cc: ConfChange): Uint8Array {
  if (!TYPES.includes(cc.type)) throw new ConfChangeError(`conf change: unknown type ${String(cc.type)}`);
  if (!validNodeId(cc.nodeId)) throw new ConfChangeError('conf change: nodeId must be a non-empty string of at most 256 bytes');
  const obj: Record<string, string> = { type: cc.type, nodeId: cc.nodeId };
  if (cc.context !== undefined) {
    if (cc.context.length > MAX_CONTEXT_BYTES) throw new ConfChangeError('conf change: context over 64 KiB');
    obj['context'] = toHex(cc.context);
  }
  return new TextEncoder().encode(JSON.stringify(obj));
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
    if (k !== 'type' && k !== 'nodeId' && k !== 'context') throw new ConfChangeError(`conf change: unknown field ${k}`);
  }
  if (!TYPES.includes(o['type'] as ConfChangeType)) throw new ConfChangeError('conf change: type must be addVoter, addLearner or removeNode');
  if (!validNodeId(o['nodeId'])) throw new ConfChangeError('conf change: nodeId must be a non-empty string of at most 256 bytes');
  const cc: ConfChange = { type: o['type'] as ConfChangeType, nodeId: o['nodeId'] };
  if (o['context'] !== undefined) {
    if (typeof o['context'] !== 'string') throw new ConfChangeError('conf change: context must be a hex string');
    cc.context = fromHex(o['context']);
  }
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
  switch (cc.type) {
    case 'addVoter':
      return { voters: conf.voters.includes(cc.nodeId) ? [...conf.voters] : [...voters, cc.nodeId], learners };
    case 'addLearner':
      return { voters, learners: conf.learners.includes(cc.nodeId) ? [...conf.learners] : [...learners, cc.nodeId] };
    case 'removeNode':
      return { voters, learners };
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
