// Peer authentication with a shared cluster secret (docs/contract.md §2
// "cluster.config.json" `cluster_secret_file`, docs/security.md "Cluster secret"): every
// peer request carries an HMAC-SHA256 over a timestamp, a random nonce, the method, the
// path and the exact body bytes. The receiver accepts it only when
//   1. the timestamp is within ±windowMs of its own clock (a captured request goes stale),
//   2. the HMAC matches (compared in constant time), and
//   3. the nonce was not seen in the window (a replay inside the window is refused).
// A request that fails any step is answered 401 before its body is decoded, so it never
// reaches the Raft core. Headers (docs/security.md):
//   x-raftlock-peer-time       sender's wall clock, ms since the epoch (decimal)
//   x-raftlock-peer-nonce      22-32 chars of base64url, fresh per request
//   x-raftlock-peer-signature  "v1=" + base64url(HMAC-SHA256(secret, canonical))
// canonical = "raftlock-peer-v1\n" + method + "\n" + path + "\n" + time + "\n" + nonce + "\n" + body
//
// Streams (POST /raft/v1/stream): the opening request is signed as above with an EMPTY
// body (so a captured stream cannot be replayed: time window + nonce cache), and every
// frame carries a tag
//   tag = first 16 bytes of HMAC-SHA256(streamKey, u64 BE seq || frame bytes)
//   streamKey = HMAC-SHA256(secret, "raftlock-peer-stream-v1\n" + nonce of the opening request)
// with seq = 0, 1, 2, … per stream. The key binds the frames to the one stream whose
// opening was verified; the sequence number binds each frame to its position, so frames
// cannot be reordered, replayed, dropped in the middle or spliced between streams. (A
// stream cut short loses its tail, which Raft tolerates like any loss.) 128-bit tags: an
// online forgery must be right the first time (the first bad tag ends the stream), and
// 2^-128 is plenty; half the bytes of a full tag on every frame.
//
// Clocks: nodes must agree within the window (default 30 s; NTP does far better). The
// nonce cache holds at most maxNonces entries, only from requests whose HMAC verified,
// so only a holder of the secret can fill it; when full, requests are refused (fail
// closed) until entries age out.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const PEER_TIME_HEADER = 'x-raftlock-peer-time';
export const PEER_NONCE_HEADER = 'x-raftlock-peer-nonce';
export const PEER_SIGNATURE_HEADER = 'x-raftlock-peer-signature';
const SIG_PREFIX = 'v1=';
const NONCE_RE = /^[A-Za-z0-9_-]{22,32}$/;
const TIME_RE = /^\d{1,16}$/;
/** bytes of a stream frame's tag (truncated HMAC-SHA256) */
export const STREAM_TAG_BYTES = 16;
const STREAM_KEY_LABEL = 'raftlock-peer-stream-v1\n';
/** below this a secret is guessable offline from one captured request */
export const MIN_SECRET_BYTES = 16;

export type PeerAuthFailure = 'missing' | 'malformed' | 'stale' | 'bad_signature' | 'replay' | 'nonce_cache_full';
export type PeerAuthResult = { ok: true } | { ok: false; reason: PeerAuthFailure };

export interface PeerAuthOptions {
  secret: Uint8Array;
  /** accepted clock difference either way (default 30 s) */
  windowMs?: number;
  /** replay cache bound (default 1,000,000 nonces) */
  maxNonces?: number;
  /** wall clock, ms (injectable for tests) */
  nowMs?: () => number;
}

type Headers = Record<string, string | string[] | undefined>;

function one(h: string | string[] | undefined): string | undefined {
  return typeof h === 'string' ? h : undefined;
}

export class PeerAuthenticator {
  private secret: Buffer;
  private readonly windowMs: number;
  private readonly maxNonces: number;
  private readonly nowMs: () => number;
  /** nonce → time (ms) after which it can be forgotten; Map keeps insertion order, which
   *  is close to expiry order, so pruning from the front is cheap */
  private readonly nonces = new Map<string, number>();

  constructor(o: PeerAuthOptions) {
    this.secret = checkedSecret(o.secret);
    this.windowMs = o.windowMs ?? 30_000;
    this.maxNonces = o.maxNonces ?? 1_000_000;
    this.nowMs = o.nowMs ?? Date.now;
  }

  /** a new secret (SIGHUP): requests signed with the old one fail from now on */
  setSecret(secret: Uint8Array): void {
    this.secret = checkedSecret(secret);
  }

  /** headers for one outbound request */
  sign(method: string, path: string, body: Uint8Array): Record<string, string> {
    const time = String(Math.floor(this.nowMs()));
    const nonce = randomBytes(16).toString('base64url');
    return { [PEER_TIME_HEADER]: time, [PEER_NONCE_HEADER]: nonce, [PEER_SIGNATURE_HEADER]: SIG_PREFIX + this.mac(method, path, time, nonce, body).toString('base64url') };
  }

  /** Cheap checks on the headers alone, before the body is read: presence, syntax, clock
   *  window. The HMAC and the nonce need the body: verify(). */
  precheck(headers: Headers): PeerAuthResult {
    const time = one(headers[PEER_TIME_HEADER]);
    const nonce = one(headers[PEER_NONCE_HEADER]);
    const sig = one(headers[PEER_SIGNATURE_HEADER]);
    if (time === undefined || nonce === undefined || sig === undefined) return { ok: false, reason: 'missing' };
    if (!TIME_RE.test(time) || !NONCE_RE.test(nonce) || !sig.startsWith(SIG_PREFIX)) return { ok: false, reason: 'malformed' };
    if (Math.abs(this.nowMs() - Number(time)) > this.windowMs) return { ok: false, reason: 'stale' };
    return { ok: true };
  }

  /** The full check of one inbound request. Records the nonce on success. */
  verify(method: string, path: string, headers: Headers, body: Uint8Array): PeerAuthResult {
    const pre = this.precheck(headers);
    if (!pre.ok) return pre;
    const time = headers[PEER_TIME_HEADER] as string;
    const nonce = headers[PEER_NONCE_HEADER] as string;
    const given = Buffer.from((headers[PEER_SIGNATURE_HEADER] as string).slice(SIG_PREFIX.length), 'base64url');
    const want = this.mac(method, path, time, nonce, body);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return { ok: false, reason: 'bad_signature' };
    const now = this.nowMs();
    this.prune(now);
    if (this.nonces.has(nonce)) return { ok: false, reason: 'replay' };
    if (this.nonces.size >= this.maxNonces) return { ok: false, reason: 'nonce_cache_full' };
    // a nonce must be remembered as long as its timestamp can still pass the window check
    this.nonces.set(nonce, Number(time) + this.windowMs);
    return { ok: true };
  }

  /** Sender: tags for the frames of one stream, whose opening request carries `openHeaders`
   *  (from sign() with an empty body). Call once per frame, in order. */
  streamSender(openHeaders: Headers): (frame: Uint8Array) => Uint8Array {
    const nonce = one(openHeaders[PEER_NONCE_HEADER]);
    if (nonce === undefined || !NONCE_RE.test(nonce)) throw new Error('assert: stream opening headers without a valid nonce (sign() them first)');
    const key = this.streamKey(nonce);
    let seq = 0;
    return (frame) => frameTag(key, seq++, frame);
  }

  /** Receiver: a verifier for one stream whose opening request passed verify() (with an
   *  empty body). Call once per frame, in order; after the first false it stays false.
   *  null when the headers carry no valid nonce. */
  streamReceiver(headers: Headers): ((frame: Uint8Array, tag: Uint8Array) => boolean) | null {
    const nonce = one(headers[PEER_NONCE_HEADER]);
    if (nonce === undefined || !NONCE_RE.test(nonce)) return null;
    const key = this.streamKey(nonce);
    let seq = 0;
    let broken = false;
    return (frame, tag) => {
      if (broken) return false;
      const want = frameTag(key, seq, frame);
      if (tag.length !== want.length || !timingSafeEqual(tag, want)) {
        broken = true;
        return false;
      }
      seq++;
      return true;
    };
  }

  /** nonces remembered now (for tests and metrics) */
  get rememberedNonces(): number {
    return this.nonces.size;
  }

  private prune(now: number): void {
    for (const [n, expires] of this.nonces) {
      if (expires >= now) break;
      this.nonces.delete(n);
    }
  }

  private streamKey(nonce: string): Buffer {
    return createHmac('sha256', this.secret).update(STREAM_KEY_LABEL + nonce).digest();
  }

  private mac(method: string, path: string, time: string, nonce: string, body: Uint8Array): Buffer {
    return createHmac('sha256', this.secret).update(`raftlock-peer-v1\n${method}\n${path}\n${time}\n${nonce}\n`).update(body).digest();
  }
}

function frameTag(key: Buffer, seq: number, frame: Uint8Array): Buffer {
  if (!Number.isSafeInteger(seq)) throw new Error(`assert: stream sequence number ${seq} out of range`);
  const s = Buffer.allocUnsafe(8);
  s.writeUInt32BE(Math.floor(seq / 2 ** 32), 0);
  s.writeUInt32BE(seq >>> 0, 4);
  return createHmac('sha256', key).update(s).update(frame).digest().subarray(0, STREAM_TAG_BYTES);
}

function checkedSecret(s: Uint8Array): Buffer {
  if (s.length < MIN_SECRET_BYTES) throw new Error(`the cluster secret must be at least ${MIN_SECRET_BYTES} bytes, got ${s.length}`);
  return Buffer.from(s);
}
