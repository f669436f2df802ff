// A node that joins with an empty disk must take its first state from a snapshot: its
// conf history has no base, so conf entries replayed from index 1 would give it a wrong
// idea of the voters (docs/raft-core.md "Joining nodes") — and a snapshot it later took of
// that state would make the wrong conf durable. Until it has a snapshot (or a seeded
// conf), it ignores appends that would fill its log from index 1; the leader answers by
// taking a snapshot and shipping it (Membership.ensureSnapshotForNewcomers).
import type { Message } from '../../raft/core/types.js';
import type { Transport } from '../../raft/seams.js';

export function guardEmptyLog(inner: Transport, bootstrapped: () => boolean, onDrop: (m: Message) => void): Transport {
  return {
    send: (msgs) => inner.send(msgs),
    flush: () => inner.flush(),
    onMessage: (handler) =>
      inner.onMessage((m) => {
        if (m.type === 'append' && m.prevIndex === 0 && m.entries.length > 0 && !bootstrapped()) {
          onDrop(m);
          return;
        }
        handler(m);
      }),
    onUnreachable: (handler) => inner.onUnreachable(handler),
    onSnapshotStatus: (handler) => inner.onSnapshotStatus(handler),
    setPeers: (peers) => inner.setPeers(peers),
    close: () => inner.close(),
  };
}
