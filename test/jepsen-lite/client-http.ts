// The request helpers every client workload shares (client-proc.ts, client-workloads.ts):
// how an HTTP answer becomes a history outcome, and the POST/GET attempts the recorder
// retries under one Idempotency-Key.
import { errorCode, httpJson, type HttpAnswer, type Outcome } from './recorder.js';
import type { OpValue } from '../checkers/history/history.js';

export const enc = encodeURIComponent;
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
/** an ok grant answer's max_hold_ms (the grant's remaining max hold, docs/contract.md §4),
 *  for the history: the checkers bound the grant by it from the op's invoke */
export function holdLeft(b: Record<string, unknown>): { max_hold_ms?: number } {
  const v = num(b.max_hold_ms);
  return v === undefined ? {} : { max_hold_ms: v };
}
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** the exclusive holder a read or a lock_held answer names */
export function holderOf(body: Record<string, unknown> | undefined): OpValue {
  const h = (body?.holder ?? (body?.error as Record<string, unknown> | undefined)?.holder) as Record<string, unknown> | undefined;
  if (!h) return {};
  const out: OpValue = {};
  const s = str(h.session_id);
  const t = num(h.fencing_token);
  if (s !== undefined) out.holder = s;
  if (t !== undefined) out.holder_token = t;
  return out;
}

/** a lock read's queue length (`waiters`, docs/contract.md), when the answer has one */
export function waitersOf(body: Record<string, unknown>): OpValue {
  const n = num(body.waiters);
  return n === undefined ? {} : { waiters: n };
}

/** every holder a lock read shows, with its mode (a shared lock has several) */
export function grantsOf(body: Record<string, unknown>): OpValue {
  if (!Array.isArray(body.holders)) return {};
  const grants = (body.holders as Record<string, unknown>[]).map((h) => ({ session: str(h.session_id) ?? '', token: num(h.fencing_token) ?? -1, mode: h.mode === 'shared' ? ('shared' as const) : ('exclusive' as const) }));
  return { grants };
}

/** 2xx → ok; 4xx → a definite failure naming the code (and what a semaphore's refusal says) */
export function definite(a: HttpAnswer, ok: (body: Record<string, unknown>) => OpValue): Outcome {
  if (a.status >= 200 && a.status < 300) return { type: 'ok', value: ok(a.body ?? {}), body: a.body ?? {} };
  const e = a.body?.error as Record<string, unknown> | undefined;
  const sem: OpValue = {};
  const limit = num(e?.limit);
  const inUse = num(e?.in_use);
  if (limit !== undefined) sem.limit = limit;
  if (inUse !== undefined) sem.in_use = inUse;
  return { type: 'fail', value: { code: errorCode(a), ...holderOf(a.body), ...sem }, body: a.body ?? {} };
}

export const post = (path: string, body: unknown, timeoutMs: number, signal?: AbortSignal) => (ep: string, key: string) => httpJson(ep + path, 'POST', body, timeoutMs, { 'idempotency-key': key }, signal);
export const get = (path: string, timeoutMs: number) => (ep: string) => httpJson(ep + path, 'GET', undefined, timeoutMs);
