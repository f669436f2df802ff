// HttpTransport: Raft messages between processes, msgpack over HTTP/1.1 (docs/transport.md).
//
// This class only wires the parts together and owns the peer table:
//   peer-server.ts       inbound HTTP: routes, limits, auth hook, ordered hand-over
//   codec.ts             wire format + validation of everything inbound
//   peer-link.ts         outbound per peer: bounded queue, batches, stream or pipeline, backoff
//   peer-stream.ts       one outbound message stream; stream-frames.ts its framing
//   snapshot-transfer.ts chunked snapshots, both directions
import type http from 'node:http';
import type https from 'node:https';
import type { Registry } from 'prom-client';
import type { Pool } from 'undici';
import type { Message, NodeId } from '../raft/core/types.js';
import type { Transport } from '../raft/seams.js';
import { TransportEvents } from './transport-events.js';
import { decodeEnvelope, decodeSnapshotChunk, type DecodeFailure } from './codec.js';
import { PeerServer, type PeerLogger, type Verdict } from './peer-server.js';
import { PeerLink } from './peer-link.js';
import { SnapshotAssembler, sendSnapshot } from './snapshot-transfer.js';
import type { StreamAuth } from './stream-frames.js';
import { TransportMetrics, type TransportStats } from './transport-metrics.js';
import { LogLimiter } from './log-limiter.js';
import { trace, tracing } from '../raft/trace.js';

export interface HttpTransportOptions {
  self: NodeId;
  cluster: string;
  /** this node's cluster id once it has one (docs/membership.md, "Incarnations"): sent
   *  with every envelope, and envelopes naming another are refused ('cluster') */
  clusterId?: () => string | undefined;
  /** where to listen; port 0 picks a free port (see address()) */
  listen: { host: string; port: number };
  /** id → peer URL (may include self, which is ignored) */
  peers: ReadonlyMap<NodeId, string>;
  logger: PeerLogger;
  /** per-node registry for raftlock_transport_* metrics */
  registry?: Registry;
  /** per-peer outbound queue bound (default 4096 messages, 64 MiB) */
  maxQueueMessages?: number;
  maxQueueBytes?: number;
  /** request body limit for message batches, both directions (default 16 MiB) */
  maxBodyBytes?: number;
  /** request body bytes buffered at once over all inbound connections (default 128 MiB);
   *  beyond it requests get 503, so a flood of large bodies cannot exhaust memory */
  maxBufferedBytes?: number;
  /** append entries per inbound request (default 100,000) */
  maxEntriesPerRequest?: number;
  /** messages per outbound request (default 1024) */
  maxBatchMessages?: number;
  /** requests in flight per peer, pipelined on one connection (default 2) */
  maxInflightRequests?: number;
  /** snapshot data size limit, both directions (default 512 MiB) */
  maxSnapshotBytes?: number;
  /** snapshot chunk size (default 1 MiB); receivers accept chunks up to this + 256 KiB */
  snapshotChunkBytes?: number;
  /** a half-received snapshot with no new chunk for this long is discarded (default 30 s) */
  snapshotAssemblyTimeoutMs?: number;
  /** per request, both directions (default 5 s) */
  requestTimeoutMs?: number;
  /** reconnect backoff after a failed request (default 50 ms doubling to 2 s, jittered) */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** at most one onUnreachable per peer per interval (default 1 s) */
  unreachableIntervalMs?: number;
  /** send messages over one long-lived stream per peer (default true); false: one POST
   *  per batch (the receiving side always serves both) */
  streaming?: boolean;
  /** a stream is ended and a new one opened after this long (default 10 s; must stay
   *  below the receiver's 30 s whole-request deadline) or this many bytes (default 256 MiB) */
  streamRotateMs?: number;
  streamRotateBytes?: number;
  /** a stream with nothing to send for this long is closed, reopened on demand (default 10 s) */
  streamIdleMs?: number;
  /** security hooks (docs/security.md "Peer authentication"): inbound authentication, outbound headers, TLS both ways */
  authenticate?: (req: http.IncomingMessage) => boolean;
  /** second authentication stage, once the body is read (an HMAC over the body); false → 401 */
  authenticateBody?: (req: http.IncomingMessage, body: Uint8Array) => boolean;
  headers?: Record<string, string>;
  /** per-request headers computed from the exact body bytes (the HMAC signature) */
  signRequest?: (method: string, path: string, body: Uint8Array) => Record<string, string>;
  tls?: { server?: https.ServerOptions; client?: Pool.Options['connect'] };
  /** per-frame tags on streams (HMAC under the cluster secret, docs/security.md "Streams"), both directions */
  streamAuth?: StreamAuth;
}

type Limits = Required<Pick<HttpTransportOptions,
  'maxQueueMessages' | 'maxQueueBytes' | 'maxBodyBytes' | 'maxBufferedBytes' | 'maxEntriesPerRequest' | 'maxBatchMessages' | 'maxInflightRequests' |
  'maxSnapshotBytes' | 'snapshotChunkBytes' | 'snapshotAssemblyTimeoutMs' | 'requestTimeoutMs' | 'backoffMinMs' | 'backoffMaxMs' | 'unreachableIntervalMs' |
  'streamRotateMs' | 'streamRotateBytes' | 'streamIdleMs'>>;

const DEFAULTS: Limits = {
  maxQueueMessages: 4096,
  maxQueueBytes: 64 * 2 ** 20,
  maxBodyBytes: 16 * 2 ** 20,
  maxBufferedBytes: 128 * 2 ** 20,
  maxEntriesPerRequest: 100_000,
  maxBatchMessages: 1024,
  maxInflightRequests: 2,
  maxSnapshotBytes: 512 * 2 ** 20,
  snapshotChunkBytes: 2 ** 20,
  snapshotAssemblyTimeoutMs: 30_000,
  requestTimeoutMs: 5_000,
  backoffMinMs: 50,
  backoffMaxMs: 2_000,
  unreachableIntervalMs: 1_000,
  streamRotateMs: 10_000,
  streamRotateBytes: 256 * 2 ** 20,
  streamIdleMs: 10_000,
};

/** the peer server's whole-request deadline at its smallest: a stream must end before it */
const MIN_SERVER_REQUEST_TIMEOUT_MS = 30_000;

/** room for the chunk's header (ids, meta with up to 1024 members) next to its bytes */
const CHUNK_OVERHEAD_BYTES = 256 * 1024;

/** trace.ts steps: an append arrives at a follower, an accepting ack at the leader */
function traceReceived(msgs: readonly Message[]): void {
  for (const m of msgs) {
    if (m.type === 'append' && m.entries.length > 0) trace('recv_append', m.to, m.entries.at(-1)!.index, m.from);
    else if (m.type === 'appendResp' && !m.reject) trace('ack_recv', m.to, m.index, m.from);
  }
}

function statusFor(f: DecodeFailure): Verdict {
  const status = f.reason === 'too_large' ? 413 : f.reason === 'cluster' || f.reason === 'unknown_peer' ? 403 : 400;
  return { status, reason: f.reason, detail: f.detail };
}

function parsePeerUrl(raw: string): URL | null {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

export class HttpTransport extends TransportEvents implements Transport {
  readonly metrics: TransportMetrics;
  private readonly limits: Limits;
  private readonly server: PeerServer;
  private readonly assembler: SnapshotAssembler;
  private readonly links = new Map<NodeId, PeerLink>();
  private readonly snapshots = new Map<NodeId, { abort: AbortController; done: Promise<void> }>();
  private readonly dirty = new Set<PeerLink>();
  private readonly limiter = new LogLimiter(60_000);
  private flushScheduled: NodeJS.Immediate | null = null;
  private closed = false;

  constructor(private readonly o: HttpTransportOptions) {
    super();
    this.limits = { ...DEFAULTS };
    for (const k of Object.keys(DEFAULTS) as (keyof Limits)[]) {
      const v = o[k];
      if (v !== undefined) {
        if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`HttpTransport: ${k} must be a positive integer, got ${v}`);
        this.limits[k] = v;
      }
    }
    if (this.limits.streamRotateMs > MIN_SERVER_REQUEST_TIMEOUT_MS - 5_000) {
      throw new Error(`HttpTransport: streamRotateMs (${this.limits.streamRotateMs}) must stay well below the receivers' ${MIN_SERVER_REQUEST_TIMEOUT_MS} ms request deadline (at most ${MIN_SERVER_REQUEST_TIMEOUT_MS - 5_000})`);
    }
    const largestBody = Math.max(this.limits.maxBodyBytes, this.limits.snapshotChunkBytes + CHUNK_OVERHEAD_BYTES);
    if (this.limits.maxBufferedBytes < largestBody) {
      throw new Error(`HttpTransport: maxBufferedBytes (${this.limits.maxBufferedBytes}) must hold at least one whole request body (${largestBody})`);
    }
    this.metrics = new TransportMetrics(o.registry);
    this.assembler = new SnapshotAssembler(this.limits.snapshotAssemblyTimeoutMs, o.logger);
    this.server = new PeerServer({
      host: o.listen.host,
      port: o.listen.port,
      maxMessagesBodyBytes: this.limits.maxBodyBytes,
      maxSnapshotBodyBytes: this.limits.snapshotChunkBytes + CHUNK_OVERHEAD_BYTES,
      maxBufferedBytes: this.limits.maxBufferedBytes,
      // a chunk of 1 MiB on a slow link needs longer than a batch of heartbeats
      requestTimeoutMs: Math.max(this.limits.requestTimeoutMs, MIN_SERVER_REQUEST_TIMEOUT_MS),
      logger: o.logger,
      metrics: this.metrics,
      onMessages: (body) => this.receiveMessages(body),
      onSnapshotChunk: (body) => this.receiveChunk(body),
      ...(o.authenticate ? { authenticate: o.authenticate } : {}),
      ...(o.authenticateBody ? { authenticateBody: o.authenticateBody } : {}),
      ...(o.streamAuth ? { streamAuth: o.streamAuth } : {}),
      ...(o.tls?.server ? { tls: o.tls.server } : {}),
    });
    this.setPeers(o.peers);
  }

  async start(): Promise<void> {
    const a = await this.server.listen();
    this.o.logger.info({ self: this.o.self, host: a.address, port: a.port }, 'peer transport listening');
  }

  /** Replace the peer server's certificate/key/CA (SIGHUP reload). New connections use
   *  them; open ones keep theirs. Throws when the transport was built without tls.server. */
  setServerTls(opts: https.ServerOptions): void {
    this.server.setSecureContext(opts);
  }

  /** the bound address, after start() */
  address(): { host: string; port: number } {
    const a = this.server.address();
    if (!a) throw new Error('HttpTransport.address(): not listening (call start() first)');
    return { host: a.address, port: a.port };
  }

  stats(): TransportStats {
    return this.metrics.stats;
  }

  /** outbound messages waiting for `peer` (0 for an unknown peer) */
  queueLength(peer: NodeId): number {
    return this.links.get(peer)?.queued ?? 0;
  }

  send(msgs: readonly Message[]): void {
    for (const m of msgs) {
      const link = this.links.get(m.to);
      if (this.closed) {
        this.metrics.dropped(m.to, 'closed', 1);
      } else if (!link || m.from !== this.o.self) {
        // labels stay bounded: an unknown destination is counted under one label
        this.metrics.dropped(link ? m.to : '(unknown)', 'unknown_peer', 1);
        this.warnOnce(`send:${m.to}`, { from: m.from, to: m.to, type: m.type }, 'message for an unknown peer (or not from this node) dropped');
      } else if (m.type === 'snapshot') {
        this.startSnapshot(link, m);
      } else {
        link.enqueue(m);
        this.dirty.add(link);
      }
    }
    // one flush per event-loop turn: everything the driver sends in this turn shares requests
    if (this.dirty.size > 0 && this.flushScheduled === null) {
      this.flushScheduled = setImmediate(() => {
        this.flushScheduled = null;
        this.flushLinks();
      });
    }
  }

  flush(): void {
    if (this.flushScheduled !== null) {
      clearImmediate(this.flushScheduled);
      this.flushScheduled = null;
    }
    this.flushLinks();
  }

  private flushLinks(): void {
    if (this.dirty.size === 0) return;
    const links = [...this.dirty];
    this.dirty.clear();
    for (const l of links) l.flush();
  }

  setPeers(peers: ReadonlyMap<NodeId, string>): void {
    if (this.closed) return;
    const wanted = new Map<NodeId, URL>();
    for (const [id, raw] of peers) {
      if (id === this.o.self) continue;
      const url = parsePeerUrl(raw);
      if (url) wanted.set(id, url);
      else this.o.logger.error({ peer: id, url: raw }, 'bad peer URL (need http: or https:); messages to this peer will be dropped');
    }
    // a removed peer, or one whose URL changed, loses its queue and connection
    for (const [id, link] of this.links) if (wanted.get(id)?.href !== link.url) this.removeLink(id, link);
    for (const [id, url] of wanted) if (!this.links.has(id)) this.links.set(id, this.newLink(id, url));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.flushScheduled) clearImmediate(this.flushScheduled);
    this.dirty.clear();
    for (const s of this.snapshots.values()) s.abort.abort();
    this.assembler.close();
    const links = [...this.links.values()];
    this.links.clear();
    await Promise.all([
      this.server.close(),
      ...links.map((l) => l.close()),
      ...[...this.snapshots.values()].map((s) => s.done),
    ]);
  }

  private newLink(peer: NodeId, url: URL): PeerLink {
    const l = this.limits;
    return new PeerLink({
      self: this.o.self, cluster: this.o.cluster, peer, url,
      ...(this.o.clusterId ? { clusterId: this.o.clusterId } : {}),
      maxQueueMessages: l.maxQueueMessages, maxQueueBytes: l.maxQueueBytes,
      maxBatchMessages: l.maxBatchMessages,
      // estimates are rounded up, and half the limit leaves room for any undercount
      maxBatchBytes: Math.floor(l.maxBodyBytes / 2), maxBodyBytes: l.maxBodyBytes,
      maxInflightRequests: l.maxInflightRequests, requestTimeoutMs: l.requestTimeoutMs,
      backoffMinMs: l.backoffMinMs, backoffMaxMs: l.backoffMaxMs, unreachableIntervalMs: l.unreachableIntervalMs,
      ...(this.o.headers ? { headers: this.o.headers } : {}),
      ...(this.o.signRequest ? { sign: this.o.signRequest } : {}),
      ...(this.o.tls?.client ? { connect: this.o.tls.client } : {}),
      streaming: this.o.streaming ?? true,
      streamRotateMs: l.streamRotateMs, streamRotateBytes: l.streamRotateBytes, streamIdleMs: l.streamIdleMs,
      ...(this.o.streamAuth ? { streamAuth: this.o.streamAuth } : {}),
      logger: this.o.logger, metrics: this.metrics,
      reportUnreachable: (p) => {
        if (!this.closed) this.emitUnreachable(p);
      },
    });
  }

  private removeLink(id: NodeId, link: PeerLink): void {
    this.links.delete(id);
    this.dirty.delete(link);
    this.snapshots.get(id)?.abort.abort();
    void link.close();
  }

  private startSnapshot(link: PeerLink, m: Extract<Message, { type: 'snapshot' }>): void {
    const peer = m.to;
    if (this.snapshots.has(peer)) {
      // the core sends the next snapshot only after hearing the status of this one; the
      // transfer in flight will report, so this one is dropped rather than queued
      this.metrics.dropped(peer, 'snapshot_busy', 1);
      this.warnOnce(`snap:${peer}`, { peer }, 'snapshot already in flight to this peer; new one dropped');
      return;
    }
    const abort = new AbortController();
    const l = this.limits;
    const opts = {
      self: this.o.self, cluster: this.o.cluster, peer, url: new URL(link.url),
      chunkBytes: l.snapshotChunkBytes, maxSnapshotBytes: l.maxSnapshotBytes, requestTimeoutMs: Math.max(l.requestTimeoutMs, 30_000),
      ...(this.o.headers ? { headers: this.o.headers } : {}),
      ...(this.o.signRequest ? { sign: this.o.signRequest } : {}),
      ...(this.o.tls?.client ? { connect: this.o.tls.client } : {}),
      onChunkSent: (bytes: number) => this.metrics.chunkSent(peer, bytes),
    };
    const done = sendSnapshot(opts, m, abort.signal, this.o.logger).then((ok) => {
      this.snapshots.delete(peer);
      this.metrics.snapshotSent(peer, ok);
      if (ok) this.metrics.sent(peer, 1, 0);
      else this.metrics.dropped(peer, 'send_failed', 1);
      if (!this.closed) this.emitSnapshotStatus(peer, ok);
    });
    this.snapshots.set(peer, { abort, done });
  }

  private deliver(m: Message): void {
    this.emitMessage(m);
  }

  private receiveMessages(body: Uint8Array): Verdict {
    if (this.closed) return { status: 503, reason: 'closed', detail: 'transport closing' };
    const r = decodeEnvelope(body, {
      cluster: this.o.cluster, self: this.o.self, knownPeers: this.links,
      maxEntries: this.limits.maxEntriesPerRequest, maxBytes: this.limits.maxBodyBytes,
      ...(this.o.clusterId ? { clusterId: this.o.clusterId } : {}),
    });
    if (!r.ok) return statusFor(r);
    this.metrics.received(r.from, r.messages.length, body.length);
    // the sender is up: our link to it need not wait out a backoff (peer-link.ts)
    this.links.get(r.from)?.peerAlive();
    if (tracing) traceReceived(r.messages);
    for (const m of r.messages) this.deliver(m);
    return { status: 204 };
  }

  private receiveChunk(body: Uint8Array): Verdict {
    if (this.closed) return { status: 503, reason: 'closed', detail: 'transport closing' };
    const r = decodeSnapshotChunk(body, {
      cluster: this.o.cluster, self: this.o.self, knownPeers: this.links,
      maxBytes: this.limits.snapshotChunkBytes + CHUNK_OVERHEAD_BYTES, maxSnapshotBytes: this.limits.maxSnapshotBytes,
    });
    if (!r.ok) return statusFor(r);
    const { verdict, message } = this.assembler.accept(r.chunk);
    if (verdict.status === 204) this.metrics.received(r.chunk.from, message ? 1 : 0, body.length);
    if (message) {
      this.metrics.snapshotReceived(r.chunk.from);
      this.deliver(message);
    }
    return verdict;
  }

  private warnOnce(key: string, obj: object, msg: string): void {
    const suppressed = this.limiter.allow(key);
    if (suppressed !== null) this.o.logger.warn(Object.assign({}, obj, { suppressed }), msg);
  }
}
