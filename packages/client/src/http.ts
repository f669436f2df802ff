// One logical REST call, retried across endpoints until it gets a definitive answer or
// its budget runs out. What makes a retry safe is declared per call:
// - 'read': no effect, retry freely;
// - 'renewal': keepalive/renew, repeating one only renews again;
// - 'keyed': a mutation; every attempt carries the SAME Idempotency-Key, so the server
//   applies it at most once and a retry returns the first answer (docs/contract.md §3 "Locks", "Idempotency").
// Failure classes (after src/api/forward.ts): a connection that never opened means nothing
// was sent (safe anywhere); an attempt that timed out or broke after sending, a 504 or a
// 502 has an unknown outcome — only a keyed or harmless call may repeat it, and if the
// budget runs out the caller gets OutcomeUnknownError, never "unavailable", because the
// write may have happened. 503 and 429 said "nothing applied, try later": that endpoint
// rests for its Retry-After and the next one is tried. 408 said "your request did not
// arrive whole": this attempt did nothing, and it is sent again, never taken for the
// answer to the call (an earlier attempt may have been applied).
import { Agent, request, type Dispatcher } from 'undici';
import { EndpointSet, parseRetryAfter } from './endpoints.js';
import { errorFromResponse, OutcomeUnknownError, RaftlockError, TooManyRequestsError, UnavailableError } from './errors.js';
import { NOT_SENT_CODES } from './not-sent.js';

export type RetryMode = 'read' | 'renewal' | 'keyed';

export interface CallSpec {
  method: 'GET' | 'POST' | 'DELETE';
  /** path with every dynamic segment already percent-encoded */
  path: string;
  /** JSON body; a function gets the ms elapsed since the call began (acquire shrinks wait_ms) */
  body?: Record<string, unknown> | ((elapsedMs: number) => Record<string, unknown>);
  retry: RetryMode;
  idempotencyKey?: string;
  /** time the server may legitimately hold the answer (wait_ms), on top of the attempt timeout */
  waitMs?: number;
  /** absolute deadline (client clock, ms) for the whole call; default: now + retry budget + waitMs */
  deadline?: number;
  signal?: AbortSignal;
  /** ask exactly this endpoint, once (e.g. a node's own /v1/cluster view) */
  endpoint?: string;
  /** served by whichever node answers (stale reads, a node's own view): never routed to
   *  the leader, whatever leaderRouting says */
  anyNode?: boolean;
}

export interface Answer {
  status: number;
  body: unknown;
  endpoint: string;
  /**
   * Client clock (ms) to base lease arithmetic on: when the answered attempt was sent, or
   * for a keyed call when its FIRST attempt was sent — a retry may return the stored answer
   * of the first attempt, whose effect (e.g. a session's start) dates from then.
   */
  sentAt: number;
}

export interface HttpOptions {
  endpoints: readonly string[];
  /** budget of one attempt (ms) */
  timeoutMs: number;
  /** budget of one call across all its retries (ms) */
  retryBudgetMs: number;
  /** bearer token when the cluster has auth on */
  token?: string;
  tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
  /** monotonic clock in ms */
  now: () => number;
  random: () => number;
  dispatcher?: Dispatcher;
  /** send calls the leader serves to the leader the answers name (default true; docs/client.md "Leader routing") */
  leaderRouting?: boolean;
}

/** the answer header naming the leader (docs/api.md "Leader hint") */
export const LEADER_HEADER = 'x-raftlock-leader';

/** Retries with less time than this left are not started. */
const MIN_ATTEMPT_MS = 25;
/** Bodies larger than this are refused: the largest legal answer (ls of 10000 locks) is far below. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

export class HttpCaller {
  readonly endpoints: EndpointSet;
  private readonly dispatcher: Dispatcher;
  private readonly ownDispatcher: boolean;
  private readonly leaderRouting: boolean;

  constructor(private readonly o: HttpOptions) {
    this.endpoints = new EndpointSet(o.endpoints, o.now, Math.floor(o.random() * o.endpoints.length));
    this.ownDispatcher = o.dispatcher === undefined;
    this.leaderRouting = o.leaderRouting !== false;
    // Keep-alive pools per origin; undici's defaults pipeline nothing, which suits long waits.
    this.dispatcher = o.dispatcher ?? new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000, connect: o.tls ? { ...o.tls } : undefined });
  }

  async close(): Promise<void> {
    if (this.ownDispatcher) await this.dispatcher.close();
  }

  /** A streaming GET on one endpoint (watch): the raw response, body unread. The caller
   *  reads and destroys the body; `signal` aborts the whole request. */
  async stream(url: string, path: string, headers: Record<string, string>, signal: AbortSignal, connectTimeoutMs: number): Promise<Dispatcher.ResponseData> {
    const h: Record<string, string> = { 'user-agent': 'raftlock-client', accept: 'text/event-stream', ...headers };
    if (this.o.token !== undefined) h.authorization = `Bearer ${this.o.token}`;
    // headersTimeout bounds the connect and the answer; the body's silence is the
    // caller's to judge (keepalive comments), so bodyTimeout is off
    return request(url + path, { dispatcher: this.dispatcher, method: 'GET', headers: h, signal, headersTimeout: connectTimeoutMs, bodyTimeout: 0 });
  }

  async call(spec: CallSpec): Promise<Answer> {
    if (spec.endpoint !== undefined) return this.callOne(spec.endpoint, spec);
    const start = this.o.now();
    const deadline = spec.deadline ?? start + this.o.retryBudgetMs + (spec.waitMs ?? 0);
    let outcomeUnknown = false;
    let last: RaftlockError | undefined;
    let firstSentAt: number | undefined;
    for (let attempt = 0; ; attempt++) {
      spec.signal?.throwIfAborted();
      // Only the endpoint changes with leader routing: what a failure means, and whether
      // the call may be repeated, stays exactly as below (the same rules on any node).
      const pick = this.endpoints.pick(this.leaderRouting && spec.anyNode !== true);
      const remaining = deadline - this.o.now();
      if (remaining <= 0 && attempt > 0) break;
      if (pick.waitMs > 0) {
        // Honour the rest the endpoints asked for (Retry-After, backoff). A lease renewal is
        // the exception: it must get its last tries in before the lease proof runs out, so
        // it never sleeps more than half of what is left. Any other call gives up when the
        // cluster asks it to wait past its budget.
        if (spec.retry === 'renewal') await sleep(Math.ceil(Math.min(pick.waitMs, Math.max(0, remaining / 2))), spec.signal);
        else if (attempt > 0 && pick.waitMs >= remaining) break;
        else await sleep(Math.ceil(Math.min(pick.waitMs, Math.max(0, remaining - MIN_ATTEMPT_MS))), spec.signal);
      }
      // An attempt with almost no time left can only fail, and would hide the real reason.
      if (attempt > 0 && deadline - this.o.now() < MIN_ATTEMPT_MS) break;
      firstSentAt ??= this.o.now();
      const r = await this.attempt(pick.url, spec, start, deadline);
      if (r.kind === 'answer') {
        // 408: the server's HTTP layer did not receive the request whole (its headers or
        // body timed out, or a relay's leader said so) and never ran it. It says nothing of
        // an earlier attempt, so it is no definite answer: like 503, retry (same key).
        if (r.answer.status < 500 && r.answer.status !== 429 && r.answer.status !== 408) {
          this.endpoints.succeeded(pick.url);
          if (spec.retry === 'keyed') r.answer.sentAt = firstSentAt;
          if (r.answer.status >= 200 && r.answer.status < 300) return r.answer;
          // a definite answer, never retried: 4xx (422 idempotency_key_reused included)
          throw errorFromResponse(r.answer.status, r.answer.body, pick.url, spec.idempotencyKey);
        }
        const err = errorFromResponse(r.answer.status, r.answer.body, pick.url);
        if (r.answer.status === 503 || r.answer.status === 429) {
          this.endpoints.retryAfter(pick.url, parseRetryAfter(r.retryAfter, 1000));
        } else if (r.answer.status === 408) {
          this.endpoints.retryAfter(pick.url, 50); // the request did not get through: send it again
        } else if (r.answer.status === 504 || r.answer.status === 502) {
          outcomeUnknown = true;
          this.endpoints.retryAfter(pick.url, 50); // the server already waited; do not spin
        } else {
          throw err; // 500 and friends: a server bug; repeating it would only hide it
        }
        last = err;
      } else {
        if (r.kind === 'unknown') outcomeUnknown = true;
        this.endpoints.connectFailed(pick.url, 0.5 + this.o.random());
        last = r.error;
      }
      if (this.o.now() >= deadline) break;
    }
    throw this.giveUp(spec, last, outcomeUnknown);
  }

  private async callOne(url: string, spec: CallSpec): Promise<Answer> {
    const start = this.o.now();
    const r = await this.attempt(url, spec, start, spec.deadline ?? start + this.o.timeoutMs + (spec.waitMs ?? 0));
    if (r.kind !== 'answer') throw r.error;
    if (r.answer.status >= 200 && r.answer.status < 300) return r.answer;
    throw errorFromResponse(r.answer.status, r.answer.body, url, spec.idempotencyKey);
  }

  private giveUp(spec: CallSpec, last: RaftlockError | undefined, outcomeUnknown: boolean): RaftlockError {
    const what = `${spec.method} ${decodeForMessage(spec.path)}`;
    const why = last ? last.message : 'no attempt could be made';
    const opts = { endpoint: last?.endpoint, status: last?.status, cause: last };
    if (outcomeUnknown && spec.retry === 'keyed') {
      return new OutcomeUnknownError(`${what}: outcome unknown after retrying (${why}); retrying with Idempotency-Key ${spec.idempotencyKey ?? '-'} is safe`, spec.idempotencyKey, opts);
    }
    if (last instanceof TooManyRequestsError) return new TooManyRequestsError(`${what}: ${why}`, opts);
    return new UnavailableError(`${what}: no endpoint gave an answer in time (last: ${why})`, opts);
  }

  private async attempt(url: string, spec: CallSpec, start: number, deadline: number): Promise<
    | { kind: 'answer'; answer: Answer; retryAfter: string | string[] | undefined }
    | { kind: 'not_sent' | 'unknown'; error: RaftlockError }
  > {
    const sentAt = this.o.now();
    const elapsed = sentAt - start;
    const attemptMs = Math.max(1, Math.ceil(Math.min(this.o.timeoutMs + (spec.waitMs ?? 0), deadline - sentAt)));
    const headers: Record<string, string> = { 'user-agent': 'raftlock-client', accept: 'application/json' };
    if (this.o.token !== undefined) headers.authorization = `Bearer ${this.o.token}`;
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    let body: string | undefined;
    if (spec.body !== undefined) {
      body = JSON.stringify(typeof spec.body === 'function' ? spec.body(elapsed) : spec.body);
      headers['content-type'] = 'application/json';
    }
    // One controller per attempt, aborted by its own timer or by the caller's signal. (Not
    // AbortSignal.any: a session's signal lives for hours and would collect dependents.)
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new Error(`no answer within ${attemptMs} ms`));
    }, attemptMs);
    const onAbort = (): void => ac.abort(spec.signal?.reason);
    spec.signal?.addEventListener('abort', onAbort, { once: true });
    const signal = ac.signal;
    try {
      const res = await request(url + spec.path, {
        dispatcher: this.dispatcher,
        method: spec.method,
        headers,
        body,
        signal,
        headersTimeout: attemptMs,
        bodyTimeout: attemptMs,
      });
      if (this.leaderRouting) this.endpoints.noteLeader(res.headers[LEADER_HEADER]);
      const text = await readText(res.body);
      let parsed: unknown;
      try {
        parsed = text.length > 0 ? JSON.parse(text) : undefined;
      } catch {
        if (res.statusCode < 300) throw new RaftlockError('bad_response', `${url}: answered ${res.statusCode} with a body that is not JSON`, { endpoint: url, status: res.statusCode });
        parsed = undefined;
      }
      return { kind: 'answer', answer: { status: res.statusCode, body: parsed, endpoint: url, sentAt }, retryAfter: res.headers['retry-after'] };
    } catch (err) {
      if (err instanceof RaftlockError) throw err;
      if (spec.signal?.aborted) throw spec.signal.reason;
      const code = errorCode(err);
      if (timedOut) return { kind: 'unknown', error: new UnavailableError(`${url}: no answer within ${attemptMs} ms`, { endpoint: url, cause: err }) };
      const kind = code !== undefined && NOT_SENT_CODES.has(code) ? 'not_sent' : 'unknown';
      const m = (err as Error)?.message ?? String(err);
      const what = code === undefined || m.includes(code) ? m : `${code} ${m}`;
      return { kind, error: new UnavailableError(`${url}: ${what}`, { endpoint: url, cause: err }) };
    } finally {
      clearTimeout(timer);
      spec.signal?.removeEventListener('abort', onAbort);
    }
  }
}

function errorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  if (typeof e?.code === 'string' && e.code !== 'UND_ERR_SOCKET') return e.code;
  if (typeof e?.cause?.code === 'string') return e.cause.code;
  return typeof e?.code === 'string' ? e.code : undefined;
}

async function readText(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) {
      body.destroy();
      throw new RaftlockError('bad_response', `answer body over ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function decodeForMessage(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** setTimeout as a promise that an AbortSignal cuts short (rejecting with its reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
