// When this node last heard from each peer, and in which term: any Raft message it
// received from it (docs/membership.md). Two readers:
//  - the leader's strict reconfiguration check ("Strict reconfiguration check"): a voter
//    counts as reachable only if a message of the leader's CURRENT term came from it
//    lately. Messages of an earlier term do not count: right after an election, the last
//    heartbeats of a leader that has since died are recent, but prove nothing about now;
//  - a node waiting for a brand-new cluster's first election ("Incarnations"): which
//    voters it has not heard from, to say so (readiness.ts).
// The core's `recentActive` flags cannot serve either: each member starts with one lease
// period of "active" when a leader takes office, whether it answers or not.
import type { Message, NodeId, Term } from '../../raft/core/types.js';
import type { Transport } from '../../raft/seams.js';

export class PeerContact {
  private readonly last = new Map<NodeId, { atMs: number; term: Term }>();

  constructor(private readonly nowMs: () => number) {}

  note(m: Message): void {
    this.last.set(m.from, { atMs: this.nowMs(), term: m.term });
  }

  /** a message from `id` arrived at or after `sinceMs` (of `term` at least, when given) */
  heardSince(id: NodeId, sinceMs: number, term?: Term): boolean {
    const c = this.last.get(id);
    return c !== undefined && c.atMs >= sinceMs && (term === undefined || c.term >= term);
  }
}

/** `inner`, noting every inbound message in `contact` before anything else sees it */
export function noteContact(inner: Transport, contact: PeerContact): Transport {
  return {
    send: (msgs) => inner.send(msgs),
    flush: () => inner.flush(),
    onMessage: (handler) =>
      inner.onMessage((m) => {
        contact.note(m);
        handler(m);
      }),
    onUnreachable: (handler) => inner.onUnreachable(handler),
    onSnapshotStatus: (handler) => inner.onSnapshotStatus(handler),
    setPeers: (peers) => inner.setPeers(peers),
    close: () => inner.close(),
  };
}
