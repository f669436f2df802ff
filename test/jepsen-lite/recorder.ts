// The client side of the history: one monotonic clock for every process of a run, and a
// recorder that runs a logical operation (possibly several HTTP attempts under one
// Idempotency-Key) and writes its invoke and completion as JSON lines to stdout.
import { randomUUID } from 'node:crypto';
import type { EventType, Fn, HistoryEvent, OpValue } from '../checkers/history/history.js';

/** ms since `t0` (a process.hrtime.bigint() value from the runner): CLOCK_MONOTONIC is one
 *  clock for every process on the machine, so all histories share a time axis. */
export function clockFrom(t0: bigint): () => number {
  return () => Number(process.hrtime.bigint() - t0) / 1e6;
}

export interface HttpAnswer {
  status: number;
  body: Record<string, unknown> | undefined;
}

/** One HTTP exchange with a deadline (and the caller's signal, when it gives up early).
 *  Throws on network errors, timeouts and aborts. */
export async function httpJson(url: string, method: string, body: unknown, timeoutMs: number, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<HttpAnswer> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: signal ? AbortSignal.any([AbortSignal.timeout(timeoutMs), signal]) : AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> | undefined;
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed };
}

export type Attempt = (endpoint: string, idempotencyKey: string) => Promise<HttpAnswer>;

export interface Outcome {
  type: 'ok' | 'fail' | 'info';
  value: OpValue;
  body?: Record<string, unknown>;
  /** the Idempotency-Key every attempt carried */
  key?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** what an error body says: the contract's `{ error: { code } }` */
export function errorCode(a: HttpAnswer): string {
  const e = a.body?.error as { code?: unknown } | undefined;
  return typeof e?.code === 'string' ? e.code : `http_${a.status}`;
}

export class Recorder {
  private seq = 0;
  /** the endpoint this client talks to first; moves on network errors and 503s */
  private ep = 0;

  constructor(
    readonly process: string,
    private readonly endpoints: readonly string[],
    readonly now: () => number,
    private readonly emit: (e: HistoryEvent) => void,
    firstEndpoint = 0,
  ) {
    this.ep = firstEndpoint % endpoints.length;
  }

  private event(id: string, type: EventType, f: Fn, value: OpValue): void {
    this.emit({ process: this.process, id, type, f, value, t: this.now() });
  }

  /**
   * Run one logical operation until a definite answer or `deadlineMs`. A 503/429/408 means
   * nothing was applied by that attempt: retry. A 504 or a network error leaves the outcome unknown:
   * retry with the same Idempotency-Key (the contract returns the first answer). Reads
   * pass `idempotent: false` and are simply retried. When `giveUp` aborts (a caller that
   * waits less than it asked the server to), the operation ends at once as info with code
   * `gave-up`: whatever was sent may still take effect. A retry after a 504 goes to the
   * next node, as a client that fails over does (the contract: the first answer, whichever
   * node is asked). `key`: send this Idempotency-Key (a job id a user sends again),
   * not a fresh one.
   */
  async run(f: Fn, input: OpValue, attempt: Attempt, deadlineMs: number, classify: (a: HttpAnswer) => Outcome, giveUp?: AbortSignal, key: string = randomUUID()): Promise<Outcome> {
    const id = `${this.process}:${this.seq++}`;
    this.event(id, 'invoke', f, input);
    const deadline = this.now() + deadlineMs;
    let unknown = false;
    let attempts = 0;
    let lastCode = 'unavailable';
    /** when the last attempt was sent: a waiting acquire's wait runs from its arrival */
    let lastTry = 0;
    const waits = input.wait_ms !== undefined;
    while (true) {
      attempts++;
      lastTry = this.now();
      const node = this.endpoints[this.ep]!;
      let a: HttpAnswer | null = null;
      try {
        a = await attempt(node, key);
      } catch (err) {
        if (giveUp?.aborted) {
          const out: Outcome = { type: 'info', value: { code: 'gave-up', attempts, ...(waits ? { last_try: lastTry } : {}) } };
          this.event(id, out.type, f, out.value);
          return out;
        }
        unknown = true;
        lastCode = (err as Error).name === 'TimeoutError' ? 'client_timeout' : 'network_error';
        this.rotate();
      }
      if (a) {
        // 408: the node's HTTP layer did not receive this attempt whole and never ran it; it
        // says nothing of an earlier attempt of the same key, so retry, as for 503
        if (a.status === 503 || a.status === 429 || a.status === 408) {
          lastCode = errorCode(a);
          this.rotate();
        } else if (a.status === 504) {
          unknown = true;
          lastCode = 'timeout';
          this.rotate();
        } else {
          const out = classify(a);
          out.value.attempts = attempts;
          if (waits) out.value.last_try = lastTry;
          // endpoints are in node order (n1, n2, …): which node gave the final answer
          if (!f.startsWith('res-') && !f.startsWith('bank-') && f !== 'transfer') out.value.node = `n${this.endpoints.indexOf(node) + 1}`;
          this.event(id, out.type, f, out.value);
          return { ...out, key };
        }
      }
      if (this.now() + 100 >= deadline) break;
      await sleep(50 + Math.min(200, 25 * attempts));
      if (giveUp?.aborted) {
        const out: Outcome = { type: 'info', value: { code: 'gave-up', attempts, ...(waits ? { last_try: lastTry } : {}) } };
        this.event(id, out.type, f, out.value);
        return out;
      }
    }
    const out: Outcome = unknown ? { type: 'info', value: { code: lastCode, attempts, ...(waits ? { last_try: lastTry } : {}) }, key } : { type: 'fail', value: { code: lastCode, attempts }, key };
    this.event(id, out.type, f, out.value);
    return out;
  }

  private rotate(): void {
    this.ep = (this.ep + 1) % this.endpoints.length;
  }
}
