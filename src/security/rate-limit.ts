// Request rate per client address (docs/contract.md §2 "cluster.config.json"
// `limits.requests_per_second_per_client`, docs/security.md "Limits"): a token bucket per
// address that refills `ratePerSecond` tokens a second and holds at most one second's worth
// (a client may burst to its rate, never beyond). Past it the request gets 429
// too_many_requests with Retry-After = seconds until one token.
//
// Memory is bounded: at most maxClients buckets, least recently seen evicted first (a
// Map kept in recency order). An evicted client starts again with a full bucket, which
// is the bucket it would have had after a second of silence anyway.
export interface RateDecision {
  ok: boolean;
  /** whole seconds until a request would pass (only when !ok) */
  retryAfterS: number;
}

interface Bucket {
  tokens: number;
  atMs: number;
}

export class ClientRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly capacity: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly nowMs: () => number,
    private readonly maxClients = 100_000,
  ) {
    if (!Number.isSafeInteger(ratePerSecond) || ratePerSecond < 1) throw new Error(`ratePerSecond must be a positive integer, got ${ratePerSecond}`);
    this.capacity = ratePerSecond;
  }

  take(client: string): RateDecision {
    const now = this.nowMs();
    let b = this.buckets.get(client);
    if (b === undefined) {
      b = { tokens: this.capacity, atMs: now };
      if (this.buckets.size >= this.maxClients) {
        const oldest = this.buckets.keys().next().value as string;
        this.buckets.delete(oldest);
      }
    } else {
      this.buckets.delete(client); // re-inserted below: most recent last
      b.tokens = Math.min(this.capacity, b.tokens + ((now - b.atMs) * this.ratePerSecond) / 1000);
      b.atMs = now;
    }
    this.buckets.set(client, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true, retryAfterS: 0 };
    }
    return { ok: false, retryAfterS: Math.max(1, Math.ceil((1 - b.tokens) / this.ratePerSecond)) };
  }

  get clients(): number {
    return this.buckets.size;
  }
}
