// Framing of the peer stream (POST /raft/v1/stream, docs/transport.md "Streams").
//
// The body of one long-lived request is a sequence of frames:
//
//   [u32 BE length][frame bytes: length bytes][tag: tagBytes bytes, only with stream auth]
//
// where the frame bytes are exactly one message envelope (codec.ts: version byte + msgpack)
// and the tag authenticates the frame and its position in the stream (peer-auth.ts). The
// HTTP chunking around it is irrelevant: frames and chunks are cut independently, so the
// receiver parses incrementally and never buffers more than one (partial) frame.
import type { RequestRejectReason } from './transport-metrics.js';

export const STREAM_PATH = '/raft/v1/stream';
export const STREAM_CONTENT_TYPE = 'application/vnd.raftlock.peer-stream';
export const FRAME_HEADER_BYTES = 4;

/** Per-frame authentication of a stream (docs/security.md "Streams"; the HMAC implementation lives in
 *  security/peer-auth.ts, the transport only calls these hooks). Both ends of a cluster
 *  must agree on it (same cluster secret), as they do for the request signature. */
export interface StreamAuth {
  /** bytes of the tag that follows every frame */
  readonly tagBytes: number;
  /** sender: a tagger for one new stream, keyed by the headers `signRequest` produced for
   *  the stream-opening request (its nonce); called once per frame, in order */
  sender(openHeaders: Readonly<Record<string, string>>): (frame: Uint8Array) => Uint8Array;
  /** receiver: a verifier for one stream whose opening request was authenticated; called
   *  once per frame, in order; null refuses the stream (401) */
  receiver(headers: Readonly<Record<string, string | string[] | undefined>>): ((frame: Uint8Array, tag: Uint8Array) => boolean) | null;
}

export type StreamFailure = { status: 400 | 401 | 403 | 409 | 413 | 503; reason: RequestRejectReason; detail: string };

/** one frame as it goes on the wire: ONE buffer, so that it is one write (one syscall) */
export function encodeStreamFrame(frame: Uint8Array, tag?: Uint8Array): Buffer {
  const tagBytes = tag?.length ?? 0;
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + frame.length + tagBytes);
  out.writeUInt32BE(frame.length, 0);
  out.set(frame, FRAME_HEADER_BYTES);
  if (tag) out.set(tag, FRAME_HEADER_BYTES + frame.length);
  return out;
}

export interface FrameParserOptions {
  /** longest frame accepted (the message body limit); longer → 413 */
  maxFrameBytes: number;
  tagBytes: number;
  /** shared with the POST routes: bytes of partial frames held at once over all streams */
  budget: { left: number };
}

/**
 * Incremental frame parser for one stream. push() each chunk as it arrives; complete frames
 * go to `onFrame` in order. A frame that lies whole inside one chunk is handed over as a
 * view (no copy: decodeEnvelope copies every byte field it keeps); a frame split over
 * chunks is collected, charging the shared budget for the bytes held, and released as
 * soon as it is complete or the stream ends.
 */
export class FrameParser {
  private readonly header = Buffer.alloc(FRAME_HEADER_BYTES);
  private headerHave = 0;
  /** bytes of the current frame + tag still expected; -1 while reading a header */
  private want = -1;
  private parts: Buffer[] = [];
  private have = 0;
  private charged = 0;
  private failed = false;

  constructor(private readonly o: FrameParserOptions) {}

  /** true while a frame is half read (the body must not end here) */
  get midFrame(): boolean {
    return this.headerHave > 0 || this.want >= 0;
  }

  /** feed one chunk; stops at the first failure (of parsing or of `onFrame`) and returns it */
  push(chunk: Buffer, onFrame: (frame: Buffer, tag: Buffer) => StreamFailure | null): StreamFailure | null {
    if (this.failed) return { status: 400, reason: 'malformed', detail: 'stream already failed' };
    let off = 0;
    while (off < chunk.length) {
      if (this.want < 0) {
        // the 4-byte length, possibly split over chunks
        if (this.headerHave === 0 && chunk.length - off >= FRAME_HEADER_BYTES) {
          this.want = chunk.readUInt32BE(off);
          off += FRAME_HEADER_BYTES;
        } else {
          const n = Math.min(FRAME_HEADER_BYTES - this.headerHave, chunk.length - off);
          chunk.copy(this.header, this.headerHave, off, off + n);
          this.headerHave += n;
          off += n;
          if (this.headerHave < FRAME_HEADER_BYTES) break;
          this.want = this.header.readUInt32BE(0);
          this.headerHave = 0;
        }
        if (this.want > this.o.maxFrameBytes) return this.fail({ status: 413, reason: 'too_large', detail: `frame of ${this.want} bytes, limit ${this.o.maxFrameBytes}` });
        this.want += this.o.tagBytes;
        if (this.want === 0) {
          // an empty frame without a tag: nothing more to wait for (decoding will refuse it)
          const r = this.emit(chunk.subarray(off, off), onFrame);
          if (r) return r;
        }
        continue;
      }
      const avail = chunk.length - off;
      if (this.have === 0 && avail >= this.want) {
        // fast path: the whole frame is inside this chunk
        const end = off + this.want;
        const r = this.emit(chunk.subarray(off, end), onFrame);
        if (r) return r;
        off = end;
        continue;
      }
      const take = Math.min(avail, this.want - this.have);
      this.o.budget.left -= take;
      this.charged += take;
      this.parts.push(chunk.subarray(off, off + take));
      this.have += take;
      off += take;
      if (this.o.budget.left < 0) return this.fail({ status: 503, reason: 'busy', detail: 'too many request bytes buffered at once' });
      if (this.have === this.want) {
        const whole = Buffer.concat(this.parts, this.have);
        this.release();
        const r = this.emit(whole, onFrame);
        if (r) return r;
      }
    }
    return null;
  }

  /** the body ended: fine between frames, an error inside one */
  end(): StreamFailure | null {
    if (this.failed) return null;
    if (this.midFrame) return this.fail({ status: 400, reason: 'malformed', detail: 'stream ended inside a frame' });
    return null;
  }

  /** give back the budget held for a partial frame (the stream ended or broke) */
  release(): void {
    this.o.budget.left += this.charged;
    this.charged = 0;
    this.parts = [];
    this.have = 0;
  }

  private emit(bytes: Buffer, onFrame: (frame: Buffer, tag: Buffer) => StreamFailure | null): StreamFailure | null {
    const frameLen = bytes.length - this.o.tagBytes;
    this.want = -1;
    const r = onFrame(bytes.subarray(0, frameLen), bytes.subarray(frameLen));
    return r ? this.fail(r) : null;
  }

  private fail(f: StreamFailure): StreamFailure {
    this.failed = true;
    this.release();
    return f;
  }
}
