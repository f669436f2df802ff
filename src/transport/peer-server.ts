// The receiving half of the peer transport: a bare node:http(s) server with two routes.
//
//   POST /raft/v1/messages   body: a message envelope (codec.ts)   → 204 | 400 | 401 | 403 | 413
//   POST /raft/v1/snapshot   body: one snapshot chunk             → 204 | 400 | 401 | 403 | 409 | 413
//   POST /raft/v1/stream     body: frames, each one envelope      → 204 | 400 | 401 | 403 | 413 | 503
//                            (long-lived; stream-frames.ts; the verdict comes when the
//                            sender ends the body, or at the first bad frame)
//
// It knows nothing about Raft: it enforces HTTP-level limits (route, auth hook, body size,
// timeouts), reads bodies, hands them to a synchronous handler and answers with the
// handler's verdict. Rejections are counted and logged at most once per remote address
// per minute. Nothing a client sends can throw out of here.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { RequestRejectReason, TransportMetrics } from './transport-metrics.js';
import { LogLimiter } from './log-limiter.js';
import { FrameParser, STREAM_PATH, type StreamAuth, type StreamFailure } from './stream-frames.js';

export const MESSAGES_PATH = '/raft/v1/messages';
export const SNAPSHOT_PATH = '/raft/v1/snapshot';
export const CONTENT_TYPE = 'application/vnd.raftlock.peer+msgpack';

export type Verdict = { status: 204 } | { status: 400 | 403 | 409 | 413 | 503; reason: RequestRejectReason; detail: string };

export interface PeerLogger {
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export interface PeerServerOptions {
  host: string;
  port: number;
  /** body limits per route, in bytes */
  maxMessagesBodyBytes: number;
  maxSnapshotBodyBytes: number;
  /** bytes of request bodies buffered at once, over all connections: past it, requests
   *  are refused with 503 instead of growing memory without bound */
  maxBufferedBytes: number;
  /** whole-request deadline (headers + body) against slow senders */
  requestTimeoutMs: number;
  authenticate?: (req: http.IncomingMessage) => boolean;
  /** checked on the complete body, before the handler (HMAC over the body, docs/security.md "Cluster secret") */
  authenticateBody?: (req: http.IncomingMessage, body: Uint8Array) => boolean;
  /** per-frame authentication on the stream route (HMAC, docs/security.md "Streams"); without it frames carry no tag */
  streamAuth?: StreamAuth;
  /** with this, the server is node:https (docs/security.md "Mutual TLS") */
  tls?: https.ServerOptions;
  logger: PeerLogger;
  metrics: TransportMetrics;
  /** the handlers run synchronously on a complete body; they decide the verdict.
   *  onMessages also gets every frame of a stream (each frame is one envelope). */
  onMessages(body: Uint8Array): Verdict;
  onSnapshotChunk(body: Uint8Array): Verdict;
}

const EMPTY = new Uint8Array(0);

class TooLarge extends Error {}
class Busy extends Error {}

/** read a body of at most `limit` bytes, charging every byte to the shared `budget`
 *  until the body is handed over (or refused) */
function readBody(req: http.IncomingMessage, limit: number, budget: { left: number }): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      budget.left += size; // the bytes go to the handler or to the GC, either way off our books
      req.removeAllListeners('data');
      if (err) {
        req.pause();
        reject(err);
      } else {
        resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
      }
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      budget.left -= chunk.length;
      if (size > limit) return settle(new TooLarge(`body over ${limit} bytes`));
      if (budget.left < 0) return settle(new Busy('too many request bytes buffered at once'));
      parts.push(chunk);
    });
    req.on('end', () => settle(null));
    req.on('error', (err) => settle(err));
    // a connection that dies mid-body: settle, so the per-connection chain never hangs
    req.on('close', () => {
      if (!req.complete) settle(new Error('request aborted'));
    });
  });
}

export class PeerServer {
  private readonly server: http.Server | https.Server;
  private readonly limiter = new LogLimiter(60_000);
  /** per-connection delivery chain: pipelined requests on one keep-alive connection are
   *  handed over in the order they were sent, whatever order their bodies finish in */
  private readonly chains = new WeakMap<Socket, Promise<void>>();
  private readonly budget: { left: number };

  constructor(private readonly opts: PeerServerOptions) {
    this.budget = { left: opts.maxBufferedBytes };
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => this.handle(req, res);
    // node enforces the timeouts below only every connectionsCheckingInterval (default
    // 30 s); checking every second makes the 10 s headers deadline a real 10 s (slowloris)
    const checking = { connectionsCheckingInterval: 1000 };
    this.server = opts.tls ? https.createServer({ ...opts.tls, ...checking }, handler) : http.createServer(checking, handler);
    this.server.requestTimeout = opts.requestTimeoutMs;
    this.server.headersTimeout = Math.min(opts.requestTimeoutMs, 10_000);
    this.server.keepAliveTimeout = 30_000;
    this.server.maxHeadersCount = 64;
    // a broken client connection is the client's problem, never ours
    this.server.on('clientError', (_err, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      else socket.destroy();
    });
  }

  listen(): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(this.opts.port, this.opts.host, () => {
        this.server.off('error', onError);
        this.server.on('error', (err) => this.opts.logger.error({ err }, 'peer server error'));
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /** new TLS context for new connections (certificate reload) */
  setSecureContext(opts: https.ServerOptions): void {
    if (!(this.server instanceof https.Server)) throw new Error('PeerServer.setSecureContext: this server was started without TLS');
    this.server.setSecureContext(opts);
  }

  address(): AddressInfo | null {
    const a = this.server.address();
    return a && typeof a === 'object' ? a : null;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = (req.url ?? '').split('?')[0];
    // Authentication before routing, on every path and method: a caller that is not a
    // cluster member (a certificate from another CA, none, no valid secret) learns nothing
    // about this port, not even which paths exist (docs/security.md "Peer transport").
    if (this.opts.authenticate && !this.safeAuthenticate(req)) return this.reject(req, res, { status: 401, reason: 'unauthenticated', detail: `peer authentication failed (${req.method} ${path?.slice(0, 64)})` });
    const limit = path === MESSAGES_PATH || path === STREAM_PATH ? this.opts.maxMessagesBodyBytes : path === SNAPSHOT_PATH ? this.opts.maxSnapshotBodyBytes : -1;
    if (limit < 0) return this.reject(req, res, { status: 404, reason: 'route', detail: `no route ${path?.slice(0, 64)}` });
    if (req.method !== 'POST') return this.reject(req, res, { status: 405, reason: 'route', detail: `method ${req.method} on ${path}` });
    // a stream's limit is per frame, not per body (a declared length says nothing)
    if (path === STREAM_PATH) return this.handleStream(req, res, limit);
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) return this.reject(req, res, { status: 413, reason: 'too_large', detail: `content-length ${declared}, limit ${limit}` });

    const body = readBody(req, limit, this.budget);
    body.catch(() => {}); // handled below, in order; this only stops an early "unhandled rejection"
    const socket = req.socket;
    const prev = this.chains.get(socket) ?? Promise.resolve();
    const next = prev.then(() => body).then(
      (bytes) => {
        // the handler delivers to Raft; an exception there is a bug in the node, which must
        // crash loudly rather than vanish into this promise chain
        if (this.opts.authenticateBody && !this.safeAuthenticateBody(req, bytes)) {
          return this.reject(req, res, { status: 401, reason: 'unauthenticated', detail: 'peer request signature check failed' });
        }
        let verdict: Verdict;
        try {
          verdict = path === MESSAGES_PATH ? this.opts.onMessages(bytes) : this.opts.onSnapshotChunk(bytes);
        } catch (err) {
          res.destroy();
          process.nextTick(() => {
            throw err;
          });
          return;
        }
        if (verdict.status === 204) {
          res.writeHead(204).end();
        } else {
          this.reject(req, res, verdict);
        }
      },
      (err: unknown) => {
        if (err instanceof TooLarge) this.reject(req, res, { status: 413, reason: 'too_large', detail: err.message });
        else if (err instanceof Busy) this.reject(req, res, { status: 503, reason: 'busy', detail: err.message });
        else res.destroy(); // the client went away mid-body: nobody to answer
      },
    );
    this.chains.set(
      socket,
      next.catch((err: unknown) => this.opts.logger.error({ err }, 'peer request handling failed')),
    );
  }

  /**
   * One stream: frames are parsed as chunks arrive and each is handed to onMessages in
   * order, synchronously, so by the time the sender's end of body is seen every frame was
   * delivered; only then the 204 goes out (the sender opens its next stream after it, which
   * keeps order across rotations). The first bad frame ends the stream with the status the
   * POST route would give and closes the connection (the rest of the body is unread).
   */
  private handleStream(req: http.IncomingMessage, res: http.ServerResponse, maxFrameBytes: number): void {
    const socket = req.socket;
    const prev = this.chains.get(socket) ?? Promise.resolve();
    // behind anything pipelined before it on this connection; until then the body waits
    // unread in the socket (no 'data' listener yet), which is TCP backpressure
    const done = prev.then(
      () =>
        new Promise<void>((resolve) => {
          // stage 2 of the opening request: its signature covers an EMPTY body (the frames
          // are authenticated one by one below), and its nonce enters the replay cache
          if (this.opts.authenticateBody && !this.safeAuthenticateBody(req, EMPTY)) {
            this.rejectStream(req, res, { status: 401, reason: 'unauthenticated', detail: 'peer stream signature check failed' });
            return resolve();
          }
          let verify: ((frame: Uint8Array, tag: Uint8Array) => boolean) | null = null;
          if (this.opts.streamAuth) {
            verify = this.safeStreamReceiver(req);
            if (!verify) {
              this.rejectStream(req, res, { status: 401, reason: 'unauthenticated', detail: 'peer stream authentication failed' });
              return resolve();
            }
          }
          const parser = new FrameParser({ maxFrameBytes, tagBytes: this.opts.streamAuth?.tagBytes ?? 0, budget: this.budget });
          const onFrame = (frame: Uint8Array, tag: Uint8Array): StreamFailure | null => {
            if (verify && !verify(frame, tag)) return { status: 401, reason: 'unauthenticated', detail: 'stream frame tag check failed (tampered, reordered, replayed or spliced)' };
            // an exception here is a bug in the node: crash loudly (as on the POST route)
            let verdict: Verdict;
            try {
              verdict = this.opts.onMessages(frame);
            } catch (err) {
              finish();
              res.destroy();
              process.nextTick(() => {
                throw err;
              });
              return { status: 400, reason: 'malformed', detail: 'handler failed' }; // stops the parser; finish() already ran
            }
            return verdict.status === 204 ? null : verdict;
          };
          let finished = false;
          const finish = (): void => {
            if (finished) return;
            finished = true;
            parser.release();
            req.removeListener('data', onData);
            resolve();
          };
          const failWith = (f: StreamFailure): void => {
            finish();
            this.rejectStream(req, res, f);
          };
          const onData = (chunk: Buffer): void => {
            if (finished) return;
            const f = parser.push(chunk, onFrame);
            if (f && !finished) failWith(f);
          };
          req.on('data', onData);
          req.on('end', () => {
            if (finished) return;
            const f = parser.end();
            if (f) return failWith(f);
            finish();
            res.writeHead(204).end();
          });
          req.on('error', () => {
            finish();
            res.destroy();
          });
          req.on('close', () => {
            if (finished) return;
            // the sender went away mid-stream (closed, restarted, reset): nobody to answer
            finish();
            res.destroy();
          });
        }),
    );
    this.chains.set(
      socket,
      done.catch((err: unknown) => this.opts.logger.error({ err }, 'peer stream handling failed')),
    );
  }

  /** refuse a stream and close its connection: the unread rest of the body is garbage to us */
  private rejectStream(req: http.IncomingMessage, res: http.ServerResponse, f: StreamFailure): void {
    this.reject(req, res, f);
    req.pause();
    const s = req.socket;
    if (res.writableFinished || res.destroyed) s.destroy();
    else res.once('close', () => s.destroy());
  }

  private safeStreamReceiver(req: http.IncomingMessage): ((frame: Uint8Array, tag: Uint8Array) => boolean) | null {
    try {
      return this.opts.streamAuth?.receiver(req.headers) ?? null;
    } catch (err) {
      this.opts.logger.error({ err }, 'peer streamAuth.receiver hook threw; refusing the stream');
      return null;
    }
  }

  private safeAuthenticate(req: http.IncomingMessage): boolean {
    try {
      return this.opts.authenticate?.(req) === true;
    } catch (err) {
      this.opts.logger.error({ err }, 'peer authenticate hook threw; refusing the request');
      return false;
    }
  }

  private safeAuthenticateBody(req: http.IncomingMessage, body: Uint8Array): boolean {
    try {
      return this.opts.authenticateBody?.(req, body) === true;
    } catch (err) {
      this.opts.logger.error({ err }, 'peer authenticateBody hook threw; refusing the request');
      return false;
    }
  }

  private reject(req: http.IncomingMessage, res: http.ServerResponse, v: { status: number; reason: RequestRejectReason; detail: string }): void {
    this.opts.metrics.rejected(v.reason);
    const remote = req.socket.remoteAddress ?? 'unknown';
    const suppressed = this.limiter.allow(remote);
    if (suppressed !== null) this.opts.logger.warn({ remote, status: v.status, reason: v.reason, detail: v.detail, suppressed }, 'peer request rejected');
    if (res.headersSent || res.destroyed) return;
    // after an error the rest of the request may be unread garbage: do not reuse the connection
    const fullyRead = req.complete;
    res.writeHead(v.status, { 'content-type': 'text/plain', ...(fullyRead ? {} : { connection: 'close' }) });
    res.end(`${v.reason}\n`);
  }
}
