// ONE outbound stream to a peer: a long-lived `POST /raft/v1/stream` whose chunked body is
// a sequence of frames (stream-frames.ts). Why: one HTTP request and one 204 per message
// batch cost two syscalls and HTTP parsing on both sides; a stream costs one write per
// batch and no answer at all, until the sender ends it (etcd's rafthttp streams too).
//
// This class only drives the request; the policy (what to write, when to reopen, backoff,
// counting) is PeerLink's. It reports its end exactly once through onEnd:
//   ok       the peer answered 204 to the end of the body: every frame was delivered
//   status   the peer refused the stream (a bad frame, auth, an old peer without the route)
//   error    the connection failed, stalled, or was closed before an answer
// with the number of messages whose frames were written but never reached the kernel
// (the caller counts those as dropped). A frame counts as sent once its write completed:
// there is no per-frame acknowledgement, that is the point.
//
// node:http is used rather than undici: its chunked request bodies write each chunk as soon
// as it is given (corked to one writev per event-loop turn) and report backpressure through
// write()'s return value and 'drain'. The socket still comes from undici's connector, so
// the same TLS options (or the reloadable connector of node-security.ts) apply to streams.
import http from 'node:http';
import type { Socket } from 'node:net';
import { buildConnector, type Pool } from 'undici';
import { encodeStreamFrame } from './stream-frames.js';

export type Connector = buildConnector.connector;

/** the connector for `connect` (undici connect options or a ready connector function) */
export function connectorFor(connect: Pool.Options['connect'] | undefined, timeoutMs: number): Connector {
  if (typeof connect === 'function') return connect;
  return buildConnector(Object.assign({}, connect, { timeout: timeoutMs }) as buildConnector.BuildOptions);
}

export type StreamEnd =
  | { ok: true; unconfirmed: number }
  | { ok: false; kind: 'status'; status: number; unconfirmed: number }
  | { ok: false; kind: 'error'; error: string; unconfirmed: number };

export interface PeerStreamOptions {
  url: URL;
  /** request path (base path of the peer URL + STREAM_PATH) */
  path: string;
  /** content type, extra headers, the opening request's signature */
  headers: Record<string, string>;
  connector: Connector;
  /** per-frame tag (stream auth); called once per frame, in order */
  tagger?: (frame: Uint8Array) => Uint8Array;
  /** end the stream (gracefully) this long after it opened / after its last write */
  rotateMs: number;
  idleMs: number;
  /** no progress for this long while the socket is full, or no answer after the end → error */
  stallTimeoutMs: number;
  onSent(messages: number, bytes: number): void;
  onDrain(): void;
  onEnd(end: StreamEnd): void;
}

export class PeerStream {
  private readonly req: http.ClientRequest;
  private ending = false;
  private done = false;
  private needDrain = false;
  /** messages written whose write has not completed yet */
  private unconfirmed = 0;
  private written = 0;
  private readonly openedAt = Date.now();
  private readonly rotateTimer: NodeJS.Timeout;
  private readonly idleTimer: NodeJS.Timeout;
  private stallTimer: NodeJS.Timeout | null = null;

  constructor(private readonly o: PeerStreamOptions) {
    const url = o.url;
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    const connectParams = { hostname: url.hostname.replace(/^\[|\]$/g, ''), host: url.host, protocol: url.protocol, port };
    this.req = http.request({
      host: connectParams.hostname,
      port,
      path: o.path,
      method: 'POST',
      // no agent: one connection per stream, closed after the answer
      headers: Object.assign({}, o.headers, { connection: 'close' }),
      createConnection: (_opts: unknown, oncreate: (err: Error | null, socket: Socket) => void) => {
        o.connector(connectParams, (err, socket) => {
          if (err || !socket) return oncreate(err ?? new Error('no socket'), null as unknown as Socket);
          // one frame, one segment, now: Nagle would hold small frames back for an ACK
          socket.setNoDelay(true);
          oncreate(null, socket);
        });
        return undefined as unknown as Socket; // node then waits for oncreate
      },
    });
    this.req.on('response', (res) => {
      res.resume();
      if (res.statusCode === 204 && this.ending) this.finish({ ok: true, unconfirmed: 0 });
      else {
        this.finish({ ok: false, kind: 'status', status: res.statusCode ?? 0, unconfirmed: 0 });
        this.req.destroy();
      }
    });
    this.req.on('error', (err) => this.finish({ ok: false, kind: 'error', error: String(err), unconfirmed: 0 }));
    this.req.on('close', () => this.finish({ ok: false, kind: 'error', error: 'connection closed before the answer', unconfirmed: 0 }));
    this.req.on('drain', () => {
      if (this.done) return;
      this.needDrain = false;
      this.clearStall();
      this.o.onDrain();
    });
    this.rotateTimer = setTimeout(() => this.end(), o.rotateMs).unref();
    this.idleTimer = setTimeout(() => this.end(), o.idleMs).unref();
  }

  /** may a frame be written now? (not ending, not over, socket not full) */
  get writable(): boolean {
    return !this.ending && !this.done && !this.needDrain;
  }

  /** ms since the stream was opened */
  get ageMs(): number {
    return Date.now() - this.openedAt;
  }

  /** body bytes written so far (for rotation by size) */
  get bytesWritten(): number {
    return this.written;
  }

  /** write one frame (one envelope holding `messages` messages) as one chunk */
  write(frame: Uint8Array, messages: number): void {
    if (!this.writable) throw new Error('assert: PeerStream.write while not writable');
    const buf = encodeStreamFrame(frame, this.o.tagger?.(frame));
    this.unconfirmed += messages;
    this.written += buf.length;
    const ok = this.req.write(buf, (err) => {
      if (err || this.done) return;
      this.unconfirmed -= messages;
      this.o.onSent(messages, frame.length);
    });
    this.idleTimer.refresh();
    if (!ok) {
      // the socket buffer is full: the caller stops writing and its queue absorbs (drop
      // oldest) until 'drain'; a peer that takes nothing for this long is treated as gone
      this.needDrain = true;
      this.stallTimer = setTimeout(() => this.abort(`stalled: the peer took nothing for ${this.o.stallTimeoutMs} ms`), this.o.stallTimeoutMs).unref();
    }
  }

  /** end the body; the peer answers 204 once it has delivered every frame */
  end(): void {
    if (this.ending || this.done) return;
    this.ending = true;
    clearTimeout(this.rotateTimer);
    clearTimeout(this.idleTimer);
    this.req.end();
    this.clearStall();
    this.stallTimer = setTimeout(() => this.abort(`no answer ${this.o.stallTimeoutMs} ms after the end of the stream`), this.o.stallTimeoutMs).unref();
  }

  /** give up now (closing, or stalled); reports an error end if not over yet */
  abort(reason: string): void {
    this.finish({ ok: false, kind: 'error', error: reason, unconfirmed: 0 });
    this.req.destroy();
  }

  private finish(end: StreamEnd): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.rotateTimer);
    clearTimeout(this.idleTimer);
    this.clearStall();
    end.unconfirmed = this.unconfirmed;
    this.unconfirmed = 0;
    this.o.onEnd(end);
  }

  private clearStall(): void {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }
}
