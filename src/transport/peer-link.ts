// The sending half for ONE peer: a bounded queue (peer-queue.ts), batching, backoff after
// failures and rate-limited unreachable reports, and one of two ways to the peer:
//
//   streaming (default)  one long-lived stream (peer-stream.ts): each flush writes the
//                        batch as ONE frame, one write; no per-batch answer. Rotated every
//                        streamRotateMs / streamRotateBytes and closed when idle.
//   POST per batch       a keep-alive undici Pool and a small pipeline of requests in
//                        flight, each answered with 204 (the fallback: streaming: false,
//                        or a peer that has no stream route).
//
// Snapshots do not pass through here (snapshot-transfer.ts): a multi-MiB transfer must not
// hold up heartbeats behind it.
//
// Ordering: a stream is ordered by TCP and delivered frame by frame in order; a rotation
// ends the old stream and waits for its 204 (= all its frames were delivered) before the
// next stream starts, while the queue keeps what comes meanwhile. With POST, one
// connection (Pool connections: 1) with HTTP/1.1 pipelining keeps per-peer order on the
// wire, and the server delivers requests of one connection in order (peer-server.ts).
// Raft stays safe under loss, reordering and duplication; order only matters for
// efficiency (an out-of-order append is rejected and costs a probe round).
import { Pool } from 'undici';
import type { Message, NodeId } from '../raft/core/types.js';
import { encodeEnvelope } from './codec.js';
import { PeerQueue, estimateSize } from './peer-queue.js';
import { CONTENT_TYPE, MESSAGES_PATH, type PeerLogger } from './peer-server.js';
import { STREAM_CONTENT_TYPE, STREAM_PATH, type StreamAuth } from './stream-frames.js';
import { PeerStream, connectorFor, type Connector, type StreamEnd } from './peer-stream.js';
import type { TransportMetrics } from './transport-metrics.js';
import { LogLimiter } from './log-limiter.js';
import { trace, tracing } from '../raft/trace.js';

export interface PeerLinkOptions {
  self: NodeId;
  cluster: string;
  /** this node's cluster id, once it has one (sent with every envelope) */
  clusterId?: () => string | undefined;
  peer: NodeId;
  url: URL;
  maxQueueMessages: number;
  maxQueueBytes: number;
  /** per request: messages and (estimated) bytes */
  maxBatchMessages: number;
  maxBatchBytes: number;
  /** hard limit on an encoded request (the peer refuses larger ones) */
  maxBodyBytes: number;
  /** requests in flight at once on the peer's connection */
  maxInflightRequests: number;
  requestTimeoutMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  unreachableIntervalMs: number;
  /** extra request headers (e.g. a cluster secret, docs/security.md "Cluster secret") */
  headers?: Record<string, string>;
  /** per-request headers from the exact body (HMAC signature, docs/security.md "Cluster secret") */
  sign?: (method: string, path: string, body: Uint8Array) => Record<string, string>;
  /** undici connect options (TLS: ca, cert, key, servername, …) */
  connect?: Pool.Options['connect'];
  /** send over a stream (default) rather than one POST per batch */
  streaming: boolean;
  /** stream rotation and idle close */
  streamRotateMs: number;
  streamRotateBytes: number;
  streamIdleMs: number;
  /** per-frame tags of streams (HMAC, docs/security.md "Streams") */
  streamAuth?: StreamAuth;
  logger: PeerLogger;
  metrics: TransportMetrics;
  reportUnreachable(peer: NodeId): void;
}

const EMPTY = new Uint8Array(0);

/** trace.ts steps: an append (by its last entry) or an accepting ack handed to the socket */
function traceWritten(batch: readonly Message[]): void {
  for (const m of batch) {
    if (m.type === 'append' && m.entries.length > 0) trace('append_sent', m.from, m.entries.at(-1)!.index, m.to);
    else if (m.type === 'appendResp' && !m.reject) trace('ack_sent', m.from, m.index, m.to);
  }
}

export class PeerLink {
  private readonly queue: PeerQueue;
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly limiter = new LogLimiter(60_000);
  private inflight = 0;
  private failures = 0;
  private backoffTimer: NodeJS.Timeout | null = null;
  private lastUnreachableAt = -Infinity;
  /** the last failure was a transport error (refused, reset, timeout), not a refusal */
  private lastFailureUnreachable = false;
  /** when the current run of failures began (null: the last attempt worked) */
  private failingSince: number | null = null;
  private closed = false;
  /** streaming mode; switched off for good if the peer has no stream route (older node) */
  private streaming: boolean;
  private stream: PeerStream | null = null;
  private connector: Connector | null = null;

  constructor(private readonly o: PeerLinkOptions) {
    this.streaming = o.streaming;
    this.queue = new PeerQueue(o.maxQueueMessages, o.maxQueueBytes);
    this.basePath = o.url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(o.url.origin, {
      connections: 1,
      pipelining: o.maxInflightRequests,
      keepAliveTimeout: 10_000,
      connectTimeout: o.requestTimeoutMs,
      headersTimeout: o.requestTimeoutMs,
      bodyTimeout: o.requestTimeoutMs,
      ...(o.connect ? { connect: o.connect } : {}),
    });
  }

  get url(): string {
    return this.o.url.href;
  }

  get queued(): number {
    return this.queue.length;
  }

  enqueue(m: Message): void {
    if (this.closed) return this.o.metrics.dropped(this.o.peer, 'closed', 1);
    const size = estimateSize(m);
    if (size > this.o.maxBatchBytes) {
      // the core bounds appends by maxMsgBytes; one above the request limit can never go
      this.warn({ type: m.type, size, limit: this.o.maxBatchBytes }, 'message too large for one request, dropped');
      return this.o.metrics.dropped(this.o.peer, 'too_large', 1);
    }
    this.o.metrics.dropped(this.o.peer, 'queue_full', this.queue.push(m, size));
  }

  /** start as many requests as the pipeline allows, or write the queue to the stream
   *  (called once per send() burst) */
  flush(): void {
    if (this.streaming) return this.flushStream();
    while (!this.closed && this.backoffTimer === null && this.inflight < this.o.maxInflightRequests && this.queue.length > 0) {
      const batch = this.queue.take(this.o.maxBatchMessages, this.o.maxBatchBytes);
      this.post(batch);
    }
    this.o.metrics.queueLength(this.o.peer, this.queue.length);
  }

  /**
   * The peer just sent us something, so it is up: a backoff left over from while it was
   * down (refused connections during its restart grow the delay to backoffMaxMs) is
   * cancelled and the queue goes out now. Without this, a node that came back waited up to
   * backoffMaxMs for our next attempt: its vote answers, or a new leader's first appends,
   * sat in the queue that long, which was enough for elections to time out
   * (docs/recovery.md). Only after transport errors: a peer that refuses us (401, 403)
   * refuses just as well after sending, so that backoff stands.
   */
  peerAlive(): void {
    if (this.failures === 0 || !this.lastFailureUnreachable || this.closed) return;
    this.failures = 0;
    if (this.backoffTimer === null) return; // an attempt is out, or the next one will start at the minimum
    clearTimeout(this.backoffTimer);
    this.backoffTimer = null;
    this.o.logger.debug({ peer: this.o.peer }, 'heard from the peer: retrying now instead of after the backoff');
    this.flush();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.backoffTimer) clearTimeout(this.backoffTimer);
    this.stream?.abort('transport closing');
    this.o.metrics.dropped(this.o.peer, 'closed', this.queue.clear());
    await this.pool.destroy().catch(() => undefined);
  }

  /** the encoded batch, or null when over the body limit (then dropped and counted) */
  private encode(batch: Message[]): Uint8Array | null {
    const clusterId = this.o.clusterId?.();
    const body = encodeEnvelope({ cluster: this.o.cluster, from: this.o.self, to: this.o.peer, messages: batch, ...(clusterId !== undefined ? { clusterId } : {}) });
    if (body.length > this.o.maxBodyBytes) {
      // cannot happen while estimateSize() rounds up; if it does, losing the batch is safe
      this.warn({ bytes: body.length, limit: this.o.maxBodyBytes }, 'encoded batch over the body limit, dropped');
      this.o.metrics.dropped(this.o.peer, 'too_large', batch.length);
      return null;
    }
    return body;
  }

  // ---- streaming ----

  /** write what is queued as frames while the stream takes them; open one if needed */
  private flushStream(): void {
    while (!this.closed && this.backoffTimer === null && this.queue.length > 0) {
      // a stream that is ending (rotation) is not replaced before its 204: the queue waits
      if (this.stream === null) this.openStream();
      const s = this.stream!;
      if (!s.writable) break;
      const batch = this.queue.take(this.o.maxBatchMessages, this.o.maxBatchBytes);
      const body = this.encode(batch);
      if (body === null) continue;
      s.write(body, batch.length);
      if (tracing) traceWritten(batch);
      if (s.bytesWritten >= this.o.streamRotateBytes) s.end();
    }
    this.o.metrics.queueLength(this.o.peer, this.queue.length);
  }

  private openStream(): void {
    const path = `${this.basePath}${STREAM_PATH}`;
    // the opening request is signed like a POST with an EMPTY body: its time and nonce keep
    // a captured stream from being replayed; the frames carry their own tags (stream auth)
    const signed = this.o.sign?.('POST', path, EMPTY) ?? {};
    const tagger = this.o.streamAuth?.sender(signed);
    this.connector ??= connectorFor(this.o.connect, this.o.requestTimeoutMs);
    const s: PeerStream = new PeerStream({
      url: this.o.url,
      path,
      headers: { 'content-type': STREAM_CONTENT_TYPE, ...this.o.headers, ...signed },
      connector: this.connector,
      ...(tagger ? { tagger } : {}),
      rotateMs: this.o.streamRotateMs,
      idleMs: this.o.streamIdleMs,
      stallTimeoutMs: this.o.requestTimeoutMs,
      onSent: (n, bytes) => {
        this.reachedAgain();
        this.o.metrics.sent(this.o.peer, n, bytes);
      },
      onDrain: () => this.flushStream(),
      onEnd: (end) => this.streamEnded(s, end),
    });
    this.stream = s;
  }

  private streamEnded(s: PeerStream, end: StreamEnd): void {
    if (this.stream === s) this.stream = null;
    const peer = this.o.peer;
    // backoff grows over consecutive failures: a stream that worked for a while before it
    // broke starts the count afresh (a refused one, e.g. 401 at every open, does not)
    if (end.ok || s.ageMs >= this.o.backoffMaxMs) this.failures = 0;
    if (end.ok) {
      // the 204: everything written was delivered (normally all counted already)
      this.o.metrics.sent(peer, end.unconfirmed, 0);
      this.o.metrics.stream(peer, 'ok');
      // the next stream, if anything waits (rotation keeps the queue)
      if (!this.closed) this.flushStream();
      return;
    }
    if (this.closed) {
      this.o.metrics.dropped(peer, 'closed', end.unconfirmed);
      return;
    }
    if (end.kind === 'status') {
      this.o.metrics.stream(peer, 'rejected');
      this.o.metrics.dropped(peer, 'rejected_by_peer', end.unconfirmed);
      if (end.status === 404 || end.status === 405) {
        // a node from before streams: POST per batch to it from now on
        this.streaming = false;
        this.o.logger.warn({ peer, url: this.o.url.href, status: end.status }, 'peer has no stream route; falling back to one POST per batch');
        return this.flush();
      }
      this.warn({ status: end.status, unconfirmed: end.unconfirmed }, 'peer refused our message stream');
      this.fail(false);
    } else {
      this.o.metrics.stream(peer, 'failed');
      this.o.metrics.dropped(peer, 'send_failed', end.unconfirmed);
      this.o.logger.debug({ peer, err: end.error, unconfirmed: end.unconfirmed }, 'stream to peer failed');
      this.fail(true);
    }
  }

  // ---- POST per batch ----

  private post(batch: Message[]): void {
    const body = this.encode(batch);
    if (body === null) return;
    this.inflight++;
    const path = `${this.basePath}${MESSAGES_PATH}`;
    this.pool
      .request({
        path,
        method: 'POST',
        body,
        headers: { 'content-type': CONTENT_TYPE, ...this.o.headers, ...this.o.sign?.('POST', path, body) },
        // Raft messages may be duplicated or retried safely; this lets undici pipeline them
        idempotent: true,
        blocking: false,
      })
      .then(
        async (res) => {
          await res.body.dump().catch(() => undefined);
          if (res.statusCode === 204) {
            this.failures = 0;
            this.reachedAgain();
            this.o.metrics.sent(this.o.peer, batch.length, body.length);
          } else {
            this.o.metrics.dropped(this.o.peer, 'rejected_by_peer', batch.length);
            this.warn({ status: res.statusCode, messages: batch.length }, 'peer rejected our messages');
            this.fail(false);
          }
        },
        (err: unknown) => {
          this.o.metrics.dropped(this.o.peer, this.closed ? 'closed' : 'send_failed', batch.length);
          if (!this.closed) {
            this.o.logger.debug({ peer: this.o.peer, err: String(err) }, 'send to peer failed');
            this.fail(true);
          }
        },
      )
      .finally(() => {
        this.inflight--;
        this.flush();
      });
  }

  /** back off exponentially (with jitter, so peers do not retry in lockstep); report
   *  unreachable for transport errors, at most once per unreachableIntervalMs */
  private fail(unreachable: boolean): void {
    this.failures++;
    this.lastFailureUnreachable = unreachable;
    this.failingSince ??= Date.now();
    if (unreachable) {
      const now = Date.now();
      if (now - this.lastUnreachableAt >= this.o.unreachableIntervalMs) {
        this.lastUnreachableAt = now;
        this.o.metrics.unreachable(this.o.peer);
        this.warn({ failures: this.failures }, 'peer unreachable');
        this.o.reportUnreachable(this.o.peer);
      }
    }
    if (this.backoffTimer !== null || this.closed) return;
    const base = Math.min(this.o.backoffMaxMs, this.o.backoffMinMs * 2 ** Math.min(this.failures - 1, 20));
    const delay = Math.round(base / 2 + (Math.random() * base) / 2);
    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = null;
      this.flush();
    }, delay);
    this.backoffTimer.unref();
  }

  /** a write went through after failures: say how long the peer was out of reach, so a
   *  node's log shows when its link came back (docs/recovery.md) */
  private reachedAgain(): void {
    if (this.failingSince === null) return;
    this.o.logger.info({ peer: this.o.peer, url: this.o.url.href, downMs: Date.now() - this.failingSince, failures: this.failures }, 'peer reachable again');
    this.failingSince = null;
  }

  private warn(obj: object, msg: string): void {
    const suppressed = this.limiter.allow(msg);
    if (suppressed !== null) this.o.logger.warn({ peer: this.o.peer, url: this.o.url.href, ...obj, suppressed }, msg);
  }
}
