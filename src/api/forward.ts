// Follower → leader relay (docs/contract.md §3 "REST API": "any node accepts any request").
// A follower sends writes and linearizable reads to the leader's advertised API URL and
// relays the answer as-is (status, body, Retry-After). Rules that keep this safe:
// - A request is forwarded at most once: the hop marker `x-raftlock-forwarded: <nodeId>`
//   makes a non-leader that receives a forwarded request answer 503 instead of relaying
//   again, so a stale routing view can never bounce a request around the cluster.
// - Failure classification follows what the client may conclude. If the leader was never
//   reached (connect refused/timed out), nothing was applied: 503 `unavailable`. Once the
//   request may have been sent, a write's outcome is unknown: 504 `timeout` (retry with
//   the same Idempotency-Key). A read that fails is always just 503. A 408 from the
//   leader (it did not receive the relayed request whole) is 503 too: nothing was applied.
import { Pool, type buildConnector } from 'undici';
import type { FastifyReply, FastifyRequest } from 'fastify';
// errors that prove the leader was never reached: the SDK's list, so both decide alike
import { NOT_SENT_CODES } from '@raftlock/client/internal';
import { ApiError } from './errors.js';

export const FORWARDED_HEADER = 'x-raftlock-forwarded';
/** Headers the leader needs to act exactly as if the client had called it. */
const KEPT_HEADERS = ['idempotency-key', 'authorization'] as const;
/** Headers of the leader's answer that the client needs. */
const RELAYED_HEADERS = ['content-type', 'retry-after'] as const;
const MAX_POOLS = 8;
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

export interface ForwarderOptions {
  nodeId: string;
  /** budget for the leader to answer, on top of any wait_ms the request asks for */
  timeoutMs: number;
  /** connector for https leader URLs (our CA, our certificate for mutual TLS); one that
   *  follows SIGHUP reloads (security/tls.ts ReloadableConnector) */
  connect?: buildConnector.connector;
}

export interface ForwardOptions {
  /** the request's own wait_ms: the leader may legitimately hold the answer that long */
  waitMs?: number;
  /** the longest the leader itself may take for this operation (its own timeouts, e.g. a
   *  membership change or a queued acquire): the relay waits that plus timeoutMs, so it
   *  never gives up — and reports "outcome unknown" — while the leader is still working */
  leaderMs?: number;
}

export class Forwarder {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly opts: ForwarderOptions) {}

  /** Was this request already forwarded by another node? */
  static isForwarded(req: FastifyRequest): boolean {
    return req.headers[FORWARDED_HEADER] !== undefined;
  }

  /** Relay `req` to `leaderApi` and send its answer on `reply`. Throws ApiError on failure. */
  async forward(req: FastifyRequest, reply: FastifyReply, leaderApi: string, signal: AbortSignal, o: ForwardOptions = {}): Promise<void> {
    if (Forwarder.isForwarded(req)) {
      throw new ApiError('unavailable', `not the leader, and the request was already forwarded by ${String(req.headers[FORWARDED_HEADER])}`);
    }
    const headers: Record<string, string> = { [FORWARDED_HEADER]: this.opts.nodeId };
    for (const h of KEPT_HEADERS) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    // The same request id in both nodes' logs (the leader adopts a well-formed one).
    headers['x-request-id'] = req.id;
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    const isRead = req.method === 'GET' || req.method === 'HEAD';
    const budgetMs = Math.max(this.opts.timeoutMs + (o.waitMs ?? 0), (o.leaderMs ?? 0) + this.opts.timeoutMs);
    let res;
    try {
      res = await this.pool(leaderApi).request({
        method: req.method as 'GET' | 'POST' | 'DELETE',
        path: req.raw.url ?? '/',
        headers,
        body,
        signal,
        headersTimeout: budgetMs,
        bodyTimeout: this.opts.timeoutMs,
      });
    } catch (e) {
      throw classify(e, isRead, leaderApi);
    }
    let payload: Buffer;
    try {
      payload = Buffer.from(await res.body.arrayBuffer());
    } catch (e) {
      throw classify(e, isRead, leaderApi);
    }
    if (res.statusCode === 408) {
      // the leader's HTTP layer did not receive the relayed request whole and never ran it:
      // nothing was applied, which is 503 in the contract; relayed as-is, a 408 read as a
      // definite answer would hide an earlier attempt of the same key that was applied
      throw new ApiError('unavailable', `the leader (${leaderApi}) did not receive the relayed request whole (408); nothing was applied`);
    }
    reply.code(res.statusCode);
    for (const name of RELAYED_HEADERS) {
      const v = h(res.headers[name]);
      if (v !== undefined) reply.header(name, v);
    }
    reply.header(FORWARDED_HEADER, this.opts.nodeId);
    await reply.send(payload);
  }

  private pool(origin: string): Pool {
    let p = this.pools.get(origin);
    if (p) return p;
    if (this.pools.size >= MAX_POOLS) {
      // Leaders change rarely; drop the least recently created pool (Map keeps insertion order).
      const [oldest, old] = this.pools.entries().next().value as [string, Pool];
      this.pools.delete(oldest);
      void old.close().catch(() => undefined);
    }
    p = new Pool(origin, {
      // Waiting acquires hold a connection for up to wait_ms: allow many, but not unbounded.
      connections: 512,
      keepAliveTimeout: 10_000,
      connectTimeout: Math.min(this.opts.timeoutMs, 5000), // plain http (a connector has its own)
      maxResponseSize: MAX_RESPONSE_BYTES,
      ...(this.opts.connect ? { connect: this.opts.connect } : {}),
    });
    this.pools.set(origin, p);
    return p;
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  }
}

function h(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function classify(e: unknown, isRead: boolean, leaderApi: string): ApiError {
  const code = (e as { code?: string }).code ?? '';
  if (isRead || NOT_SENT_CODES.has(code)) {
    return new ApiError('unavailable', `leader ${leaderApi} unreachable (${code || 'error'}); nothing was applied`, { cause: e });
  }
  return new ApiError('timeout', `leader ${leaderApi} did not answer (${code || 'error'}); the outcome is unknown, retry with the same Idempotency-Key`, { cause: e });
}
