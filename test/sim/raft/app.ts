// The toy replicated application: its whole state is a chained digest of every applied
// entry (index, term, kind, bytes: test/checkers/raft/chain-digest.ts), the count of
// applied writes, and the membership as of the applied index (needed to label snapshots). Two nodes with the same digest at the
// same index applied the same sequence, so State Machine Safety becomes one comparison.
import type { ConfState, Entry, Index, Snapshot, Term } from '../../../src/raft/core/types.js';
import { applyConfChange, decodeConfChange } from '../../../src/raft/core/conf.js';
import { cloneConf } from '../../../src/raft/core/storage.js';
import { chainDigest } from '../../checkers/raft/chain-digest.js';

export interface AppState {
  applied: Index;
  digest: number;
  writes: number;
  conf: ConfState;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function encodeAppState(s: AppState): Uint8Array {
  return enc.encode(JSON.stringify({ applied: s.applied, digest: s.digest, writes: s.writes }));
}

export class ToyApp {
  state: AppState;

  /** start from the node's latest durable snapshot (index 0: the bootstrap state) */
  constructor(snap: Snapshot) {
    this.state = { applied: 0, digest: 0, writes: 0, conf: snap.meta.conf };
    if (snap.meta.index > 0) this.restore(snap);
  }

  restore(snap: Snapshot): void {
    const body = JSON.parse(dec.decode(snap.data)) as { applied: number; digest: number; writes: number };
    if (body.applied !== snap.meta.index) {
      throw new Error(`snapshot data is at ${body.applied} but its meta says ${snap.meta.index}`);
    }
    this.state = { applied: body.applied, digest: body.digest, writes: body.writes, conf: snap.meta.conf };
  }

  apply(e: Entry): void {
    const s = this.state;
    if (e.index !== s.applied + 1) throw new Error(`applied ${e.index} after ${s.applied}: a gap or a repeat`);
    let conf = s.conf;
    if (e.kind === 'conf') conf = applyConfChange(conf, decodeConfChange(e.data));
    this.state = {
      applied: e.index, digest: chainDigest(s.digest, e), writes: s.writes + (e.kind === 'normal' ? 1 : 0), conf,
    };
  }

  /** an application snapshot at the applied index, labelled with that entry's term */
  snapshot(term: Term): Snapshot {
    const s = this.state;
    return { meta: { index: s.applied, term, conf: cloneConf(s.conf) }, data: encodeAppState(s) };
  }
}
