// Transport counters: plain tallies (always; tests and `stats()` read them) mirrored into
// prom-client metrics when a per-node Registry is injected. Label values are bounded:
// peers are cluster members (validated before they become labels), reasons are fixed sets.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { NodeId } from '../raft/core/types.js';
import type { RejectReason } from './codec.js';

/** why an outbound message never reached the peer */
export type DropReason = 'queue_full' | 'too_large' | 'send_failed' | 'rejected_by_peer' | 'unknown_peer' | 'closed' | 'snapshot_busy';
/** why an inbound request was refused */
export type RequestRejectReason = RejectReason | 'unauthenticated' | 'route' | 'snapshot_sequence' | 'closed' | 'busy';

export interface TransportStats {
  sent: number;
  received: number;
  bytesSent: number;
  bytesReceived: number;
  dropped: Partial<Record<DropReason, number>>;
  rejected: Partial<Record<RequestRejectReason, number>>;
  unreachable: number;
  snapshotsSent: { ok: number; failed: number };
  snapshotsReceived: number;
  /** outbound streams by how they ended: ok (204), failed (connection), rejected (status) */
  streams: Record<StreamResult, number>;
}

export type StreamResult = 'ok' | 'failed' | 'rejected';

function bump<K extends string>(rec: Partial<Record<K, number>>, k: K, n: number): void {
  rec[k] = (rec[k] ?? 0) + n;
}

export class TransportMetrics {
  readonly stats: TransportStats = {
    sent: 0, received: 0, bytesSent: 0, bytesReceived: 0, dropped: {}, rejected: {}, unreachable: 0,
    snapshotsSent: { ok: 0, failed: 0 }, snapshotsReceived: 0, streams: { ok: 0, failed: 0, rejected: 0 },
  };
  private readonly prom?: {
    sent: Counter<'peer'>; received: Counter<'peer'>; bytesSent: Counter<'peer'>; bytesReceived: Counter<'peer'>;
    dropped: Counter<'peer' | 'reason'>; rejected: Counter<'reason'>; unreachable: Counter<'peer'>;
    snapshots: Counter<'peer' | 'direction' | 'result'>; queue: Gauge<'peer'>; streams: Counter<'peer' | 'result'>;
  };

  constructor(registry?: Registry) {
    if (!registry) return;
    const registers = [registry];
    this.prom = {
      sent: new Counter({ name: 'raftlock_transport_messages_sent_total', help: 'Raft messages delivered to a peer (acknowledged by its transport)', labelNames: ['peer'], registers }),
      received: new Counter({ name: 'raftlock_transport_messages_received_total', help: 'validated Raft messages received from a peer', labelNames: ['peer'], registers }),
      bytesSent: new Counter({ name: 'raftlock_transport_bytes_sent_total', help: 'request body bytes sent to a peer (messages and snapshot chunks)', labelNames: ['peer'], registers }),
      bytesReceived: new Counter({ name: 'raftlock_transport_bytes_received_total', help: 'accepted request body bytes received from a peer', labelNames: ['peer'], registers }),
      dropped: new Counter({ name: 'raftlock_transport_messages_dropped_total', help: 'outbound Raft messages dropped (Raft tolerates loss)', labelNames: ['peer', 'reason'], registers }),
      rejected: new Counter({ name: 'raftlock_transport_requests_rejected_total', help: 'inbound peer requests refused', labelNames: ['reason'], registers }),
      unreachable: new Counter({ name: 'raftlock_transport_unreachable_total', help: 'peer unreachable reports given to Raft (rate-limited)', labelNames: ['peer'], registers }),
      snapshots: new Counter({ name: 'raftlock_transport_snapshots_total', help: 'snapshot transfers', labelNames: ['peer', 'direction', 'result'], registers }),
      streams: new Counter({ name: 'raftlock_transport_streams_total', help: 'outbound message streams ended, by result: ok (peer answered 204), failed (connection error, stall), rejected (peer refused)', labelNames: ['peer', 'result'], registers }),
      queue: new Gauge({ name: 'raftlock_transport_queue_messages', help: 'outbound messages waiting per peer', labelNames: ['peer'], registers }),
    };
  }

  sent(peer: NodeId, n: number, bytes: number): void {
    this.stats.sent += n;
    this.stats.bytesSent += bytes;
    this.prom?.sent.inc({ peer }, n);
    this.prom?.bytesSent.inc({ peer }, bytes);
  }

  chunkSent(peer: NodeId, bytes: number): void {
    this.stats.bytesSent += bytes;
    this.prom?.bytesSent.inc({ peer }, bytes);
  }

  received(peer: NodeId, n: number, bytes: number): void {
    this.stats.received += n;
    this.stats.bytesReceived += bytes;
    this.prom?.received.inc({ peer }, n);
    this.prom?.bytesReceived.inc({ peer }, bytes);
  }

  dropped(peer: NodeId, reason: DropReason, n: number): void {
    if (n <= 0) return;
    bump(this.stats.dropped, reason, n);
    this.prom?.dropped.inc({ peer, reason }, n);
  }

  rejected(reason: RequestRejectReason): void {
    bump(this.stats.rejected, reason, 1);
    this.prom?.rejected.inc({ reason });
  }

  unreachable(peer: NodeId): void {
    this.stats.unreachable++;
    this.prom?.unreachable.inc({ peer });
  }

  snapshotSent(peer: NodeId, ok: boolean): void {
    if (ok) this.stats.snapshotsSent.ok++;
    else this.stats.snapshotsSent.failed++;
    this.prom?.snapshots.inc({ peer, direction: 'out', result: ok ? 'ok' : 'failed' });
  }

  snapshotReceived(peer: NodeId): void {
    this.stats.snapshotsReceived++;
    this.prom?.snapshots.inc({ peer, direction: 'in', result: 'ok' });
  }

  stream(peer: NodeId, result: StreamResult): void {
    this.stats.streams[result]++;
    this.prom?.streams.inc({ peer, result });
  }

  queueLength(peer: NodeId, n: number): void {
    this.prom?.queue.set({ peer }, n);
  }
}
