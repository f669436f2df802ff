// The replicated application of a raftlock node: the lock FSM plus the member address
// book, behind the driver's Application interface. Entries are decoded and validated here
// (outside the pure FSM); a malformed entry — which our own leaders never write — is
// applied as a no-op on every node alike, so replicas stay identical and the node lives.
import type { Entry, Index } from '../../raft/core/types.js';
import type { Application } from '../../raft/seams.js';
import { LockFsm, type ApplyOutput, type LockFsmOptions } from '../../lock-fsm/index.js';
import { decodeCommand, decodeValue, encodeValue } from './command-codec.js';

export interface MemberAddress {
  id: string;
  api: string;
  peer: string;
}

/** snapshot layout: format tag + FSM bytes + address book (ids → URLs survive compaction) */
interface AppSnapshotV1 {
  format: 'raftlock/app';
  v: 1;
  fsm: Uint8Array;
  members: [string, string, string][];
  /** learners to promote to voter once caught up (absent in snapshots of older nodes) */
  promote?: string[];
}

export const NOOP_OUTPUT: ApplyOutput = { result: { ok: true, kind: 'noop' }, events: [] };

export class LockApp implements Application<ApplyOutput> {
  fsm: LockFsm;
  /** every member this node has heard of, current or past, by id */
  readonly members = new Map<string, MemberAddress>();
  /** learners added to become voters: the leader promotes them once caught up (set from
   *  the addLearner entries' context by Membership, docs/membership.md) */
  readonly promotionPending = new Set<string>();

  constructor(
    private readonly fsmOptions: LockFsmOptions,
    private readonly onBadEntry: (index: Index, err: Error) => void,
  ) {
    this.fsm = new LockFsm(fsmOptions);
  }

  apply(entry: Entry): ApplyOutput {
    let env;
    try {
      env = decodeCommand(entry.data);
    } catch (err) {
      this.onBadEntry(entry.index, err as Error);
      return NOOP_OUTPUT;
    }
    return this.fsm.apply(entry.index, env);
  }

  snapshot(): Uint8Array {
    const snap: AppSnapshotV1 = {
      format: 'raftlock/app',
      v: 1,
      fsm: this.fsm.snapshot(encodeValue),
      members: [...this.members.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((m) => [m.id, m.api, m.peer]),
      ...(this.promotionPending.size > 0 ? { promote: [...this.promotionPending].sort() } : {}),
    };
    return encodeValue(snap);
  }

  restore(data: Uint8Array, _index: Index): void {
    if (data.length === 0) {
      this.fsm = new LockFsm(this.fsmOptions);
      this.promotionPending.clear();
      return;
    }
    const snap = decodeValue(data) as Partial<AppSnapshotV1> | null;
    if (!snap || snap.format !== 'raftlock/app' || snap.v !== 1 || !(snap.fsm instanceof Uint8Array) || !Array.isArray(snap.members)) {
      throw new Error('snapshot is not a raftlock v1 application snapshot');
    }
    const fsm = LockFsm.fromSnapshot(snap.fsm, decodeValue, this.fsmOptions);
    for (const m of snap.members) {
      if (!Array.isArray(m) || m.length !== 3 || !m.every((x) => typeof x === 'string')) throw new Error('snapshot member entry is malformed');
    }
    if (snap.promote !== undefined && (!Array.isArray(snap.promote) || !snap.promote.every((x) => typeof x === 'string'))) throw new Error('snapshot promotion list is malformed');
    this.fsm = fsm;
    // Replace, never merge: the book is replicated state as of the snapshot's index, and an
    // address this node knew from later entries it is now told to forget (a member removed
    // since, an id re-added with new URLs) must not linger.
    this.members.clear();
    for (const [id, api, peer] of snap.members) this.members.set(id, { id, api, peer });
    this.promotionPending.clear();
    for (const id of snap.promote ?? []) this.promotionPending.add(id);
  }
}
