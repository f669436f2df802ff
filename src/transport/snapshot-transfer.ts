// Snapshots in chunks, both directions.
//
// Sender: one transfer per peer at a time, on its own short-lived connection (so a large
// transfer never delays heartbeats), chunk after chunk, each acknowledged with 204 before
// the next leaves. The outcome is reported once, as onSnapshotStatus(peer, ok).
//
// Receiver: one half-assembled snapshot per peer, at most maxSnapshotBytes. Chunks must
// arrive in order (offset == bytes received so far) with the same transfer id, total,
// term and meta; offset 0 starts a new transfer and discards any older one; a transfer
// that goes quiet for assemblyTimeoutMs is discarded. A complete transfer becomes one
// `snapshot` Message.
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import type { Message, NodeId, SnapshotMeta } from '../raft/core/types.js';
import { encodeSnapshotChunk, type SnapshotChunk } from './codec.js';
import { CONTENT_TYPE, SNAPSHOT_PATH, type PeerLogger, type Verdict } from './peer-server.js';

export interface SnapshotSendOptions {
  self: NodeId;
  cluster: string;
  peer: NodeId;
  url: URL;
  chunkBytes: number;
  maxSnapshotBytes: number;
  requestTimeoutMs: number;
  headers?: Record<string, string>;
  /** per-request headers from the exact body (HMAC signature, docs/security.md "Cluster secret") */
  sign?: (method: string, path: string, body: Uint8Array) => Record<string, string>;
  connect?: Pool.Options['connect'];
  onChunkSent(bytes: number): void;
}

/** Send one snapshot message; resolves with success, never rejects. `signal` aborts the
 *  transfer (transport closing, peer removed), also mid-request. */
export async function sendSnapshot(o: SnapshotSendOptions, m: Extract<Message, { type: 'snapshot' }>, signal: AbortSignal, log: PeerLogger): Promise<boolean> {
  const data = m.snapshot.data;
  if (data.length > o.maxSnapshotBytes) {
    log.error({ peer: o.peer, bytes: data.length, limit: o.maxSnapshotBytes }, 'snapshot larger than maxSnapshotBytes, not sent');
    return false;
  }
  const transfer = randomBytes(12).toString('base64url');
  const pool = new Pool(o.url.origin, {
    connections: 1,
    connectTimeout: o.requestTimeoutMs,
    headersTimeout: o.requestTimeoutMs,
    bodyTimeout: o.requestTimeoutMs,
    ...(o.connect ? { connect: o.connect } : {}),
  });
  const path = `${o.url.pathname.replace(/\/+$/, '')}${SNAPSHOT_PATH}`;
  try {
    let offset = 0;
    do {
      if (signal.aborted) return false;
      const chunk = data.subarray(offset, Math.min(data.length, offset + o.chunkBytes));
      const body = encodeSnapshotChunk({
        cluster: o.cluster, from: o.self, to: o.peer, transfer, offset, total: data.length, term: m.term, meta: m.snapshot.meta, chunk,
      });
      const res = await pool.request({ path, method: 'POST', body, signal, headers: { 'content-type': CONTENT_TYPE, ...o.headers, ...o.sign?.('POST', path, body) } });
      await res.body.dump().catch(() => undefined);
      if (res.statusCode !== 204) {
        log.warn({ peer: o.peer, transfer, offset, status: res.statusCode }, 'peer refused a snapshot chunk');
        return false;
      }
      o.onChunkSent(body.length);
      offset += chunk.length;
    } while (offset < data.length);
    return true;
  } catch (err) {
    if (signal.aborted) return false;
    log.warn({ peer: o.peer, transfer, err: String(err) }, 'snapshot transfer failed');
    return false;
  } finally {
    await pool.destroy().catch(() => undefined);
  }
}

interface Assembly {
  transfer: string;
  total: number;
  term: number;
  meta: SnapshotMeta;
  metaKey: string;
  parts: Uint8Array[];
  received: number;
  timer: NodeJS.Timeout;
}

export class SnapshotAssembler {
  private readonly inProgress = new Map<NodeId, Assembly>();

  constructor(
    private readonly assemblyTimeoutMs: number,
    private readonly log: PeerLogger,
  ) {}

  /** take one validated chunk; returns the verdict and, when the last chunk completed a
   *  snapshot, the Message to deliver */
  accept(c: SnapshotChunk): { verdict: Verdict; message?: Message } {
    let a = this.inProgress.get(c.from);
    if (c.offset === 0) {
      if (a) this.discard(c.from, a.transfer === c.transfer ? 'restarted' : 'superseded by a new transfer');
      a = this.start(c);
    }
    const refusal = !a
      ? 'no transfer in progress'
      : a.transfer !== c.transfer
        ? `transfer ${c.transfer} but ${a.transfer} is in progress`
        : a.received !== c.offset
          ? `offset ${c.offset}, expected ${a.received}`
          : a.total !== c.total || a.term !== c.term || a.metaKey !== JSON.stringify(c.meta)
            ? 'total, term or meta changed mid-transfer'
            : null;
    if (refusal !== null || !a) {
      if (a) this.discard(c.from, refusal ?? 'refused');
      return { verdict: { status: 409, reason: 'snapshot_sequence', detail: refusal ?? 'refused' } };
    }
    a.parts.push(c.chunk);
    a.received += c.chunk.length;
    a.timer.refresh();
    if (a.received < a.total) return { verdict: { status: 204 } };
    this.inProgress.delete(c.from);
    clearTimeout(a.timer);
    const data = new Uint8Array(a.total);
    let at = 0;
    for (const p of a.parts) {
      data.set(p, at);
      at += p.length;
    }
    const message: Message = { type: 'snapshot', from: c.from, to: c.to, term: a.term, snapshot: { meta: a.meta, data } };
    return { verdict: { status: 204 }, message };
  }

  close(): void {
    for (const peer of [...this.inProgress.keys()]) this.discard(peer, 'transport closing');
  }

  private start(c: SnapshotChunk): Assembly {
    const timer = setTimeout(() => this.discard(c.from, `no chunk for ${this.assemblyTimeoutMs} ms`), this.assemblyTimeoutMs);
    timer.unref();
    const a: Assembly = { transfer: c.transfer, total: c.total, term: c.term, meta: c.meta, metaKey: JSON.stringify(c.meta), parts: [], received: 0, timer };
    this.inProgress.set(c.from, a);
    return a;
  }

  private discard(peer: NodeId, why: string): void {
    const a = this.inProgress.get(peer);
    if (!a) return;
    clearTimeout(a.timer);
    this.inProgress.delete(peer);
    this.log.info({ peer, transfer: a.transfer, received: a.received, total: a.total, why }, 'discarded a partial snapshot');
  }

  /** partial transfers held right now (for tests and debugging) */
  get pending(): number {
    return this.inProgress.size;
  }
}
