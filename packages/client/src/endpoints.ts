// Which API URL to try next. Any node accepts any request (followers forward to the
// leader), so the client spreads requests round-robin over the endpoints it believes
// healthy. An endpoint that failed to connect, or answered 503/429, rests until its
// `notBefore`: for 503/429 that is the server's Retry-After, for connection failures an
// exponential backoff. When every endpoint rests, the caller is told how long to wait
// for the first one to wake, instead of hammering a cluster that said "later".
//
// Leader routing (docs/client.md "Leader routing"): every answer names the leader its node
// knows (the x-raftlock-leader header, docs/api.md "Leader hint"). When that URL is one of
// these endpoints, calls the leader serves go to it first, sparing a follower's relay
// (two hops); while it rests, the rotation above takes over, and the next answer names
// the leader again. Only the endpoints given are ever used: a hint naming anything else is
// ignored, so no request (or token) goes to an address the application did not list.
//
// Pure bookkeeping with an injected clock, so failover rules are unit-testable.

export interface EndpointPick {
  url: string;
  /** ms to wait before using it (0 when it is ready now) */
  waitMs: number;
}

interface State {
  url: string;
  notBefore: number;
  failures: number;
}

/** Backoff after connection failures: 100 ms doubling up to 2 s. */
const BASE_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 2000;
/** Retry-After beyond this is clamped: a misbehaving proxy must not park a client for hours. */
export const MAX_RETRY_AFTER_MS = 30_000;

export class EndpointSet {
  private readonly states: State[];
  private next: number;
  /** the endpoint the last hint named as leader, if it is one of ours */
  private leader: State | undefined;

  constructor(urls: readonly string[], private readonly now: () => number, startAt = 0) {
    if (urls.length === 0) throw new Error('RaftlockClient: at least one endpoint is required');
    this.states = urls.map((url) => ({ url: normalizeEndpoint(url), notBefore: 0, failures: 0 }));
    this.next = Math.abs(Math.trunc(startAt)) % urls.length;
  }

  get urls(): string[] {
    return this.states.map((s) => s.url);
  }

  /** the endpoint last named as the leader (one of urls), or null */
  get leaderUrl(): string | null {
    return this.leader?.url ?? null;
  }

  /** An answer's leader hint (its x-raftlock-leader header): remembered when it names one
   *  of the endpoints; anything else (absent, malformed, another address) changes nothing. */
  noteLeader(hint: string | string[] | undefined): void {
    const v = Array.isArray(hint) ? hint[0] : hint;
    if (v === undefined || v === '' || (this.leader !== undefined && v === this.leader.url)) return;
    let url: string;
    try {
      url = normalizeEndpoint(v);
    } catch {
      return;
    }
    const s = this.find(url);
    if (s) this.leader = s;
  }

  /** The next endpoint to try. `toLeader`: the known leader when it is ready (the rotation
   *  is not advanced); otherwise, and for every other call, the next endpoint in rotation
   *  that is ready, else the one that wakes first. */
  pick(toLeader = false): EndpointPick {
    const t = this.now();
    if (toLeader && this.leader !== undefined && this.leader.notBefore <= t) return { url: this.leader.url, waitMs: 0 };
    const n = this.states.length;
    let best: State | undefined;
    for (let i = 0; i < n; i++) {
      const s = this.states[(this.next + i) % n] as State;
      if (s.notBefore <= t) {
        this.next = (this.states.indexOf(s) + 1) % n;
        return { url: s.url, waitMs: 0 };
      }
      if (!best || s.notBefore < best.notBefore) best = s;
    }
    // every endpoint rests: the one that wakes first
    const chosen = best as State;
    this.next = (this.states.indexOf(chosen) + 1) % n;
    return { url: chosen.url, waitMs: Math.max(0, chosen.notBefore - t) };
  }

  /** The endpoint answered normally: forget its failures. */
  succeeded(url: string): void {
    const s = this.find(url);
    if (!s) return;
    s.failures = 0;
    s.notBefore = 0;
  }

  /** Could not connect, or the connection broke: back off exponentially (with jitter). */
  connectFailed(url: string, jitter = 1): void {
    const s = this.find(url);
    if (!s) return;
    const backoff = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.min(s.failures, 10));
    s.failures++;
    s.notBefore = this.now() + Math.round(backoff * jitter);
  }

  /** 503/429: rest for the server's Retry-After (ms), clamped to [0, MAX_RETRY_AFTER_MS]. */
  retryAfter(url: string, ms: number): void {
    const s = this.find(url);
    if (!s) return;
    s.notBefore = this.now() + Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
  }

  private find(url: string): State | undefined {
    return this.states.find((s) => s.url === url);
  }
}

/** "http://h:1/" → "http://h:1"; rejects what is not an http(s) URL, naming it. */
export function normalizeEndpoint(url: string): string {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    throw new Error(`endpoint ${JSON.stringify(url)} is not a URL (expected e.g. http://127.0.0.1:7001)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`endpoint ${JSON.stringify(url)} must be http:// or https://`);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

/**
 * Retry-After in ms: delay-seconds or an HTTP date (RFC 9110 §10.2.3). Missing or
 * malformed: `fallbackMs`.
 */
export function parseRetryAfter(v: string | string[] | undefined, fallbackMs: number, nowWallMs = Date.now()): number {
  const s = Array.isArray(v) ? v[0] : v;
  if (s === undefined || s.trim() === '') return fallbackMs;
  if (/^\d+$/.test(s.trim())) return Math.min(MAX_RETRY_AFTER_MS, Number(s.trim()) * 1000);
  const at = Date.parse(s);
  if (Number.isNaN(at)) return fallbackMs;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, at - nowWallMs));
}
