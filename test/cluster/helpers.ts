// Shared checks for the real-process cluster suites (test/cluster/*.test.ts): the error
// shape of the contract, a fencing-token monotonicity witness, a Prometheus text parser,
// and a retry loop that only forgives what the contract says is retryable.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import type { ClusterHarness, HarnessResponse } from '../support/cluster-harness.js';

/** The contract's error shape (docs/contract.md §3 "Errors"), with the expected status and code. */
export function assertError(res: HarnessResponse, status: number, code: string, what = ''): void {
  const ctx = `${what ? what + ': ' : ''}got ${res.status} ${res.text.slice(0, 300)}`;
  assert.equal(res.status, status, ctx);
  assert.equal(typeof res.body, 'object', ctx);
  assert.ok(res.body && typeof res.body.error === 'object', ctx);
  assert.equal(res.body.error.code, code, ctx);
  assert.equal(typeof res.body.error.message, 'string', ctx);
  assert.ok(res.body.error.message.length > 0, ctx);
  if (status === 503 || status === 429) assert.ok(res.headers.get('retry-after'), `${ctx}: Retry-After missing`);
}

/** Any 4xx in the contract's shape (for fuzzed input, where several codes are right). */
export function assertClientError(res: HarnessResponse, what: string): void {
  const ctx = `${what}: got ${res.status} ${res.text.slice(0, 300)}`;
  assert.ok(res.status >= 400 && res.status < 500, ctx);
  assert.ok(res.body && typeof res.body === 'object' && typeof res.body.error?.code === 'string' && typeof res.body.error?.message === 'string', ctx);
  assert.match(res.body.error.code, /^[a-z_]+$/, ctx);
}

/**
 * Witness for "fencing tokens strictly increasing": every grant the suite sees, in the order
 * the grants happened, must carry a token above every earlier one (docs/contract.md §3 "Locks", "Fencing tokens").
 * Callers record grants in the order they know them to have happened.
 */
export class TokenWitness {
  private highest = 0;
  private readonly seen = new Map<number, string>();

  grant(token: unknown, what: string): number {
    assert.equal(typeof token, 'number', `${what}: fencing_token is ${String(token)}`);
    const t = token as number;
    assert.ok(Number.isSafeInteger(t) && t > 0, `${what}: fencing_token ${t} is not a positive integer`);
    assert.ok(!this.seen.has(t), `${what}: fencing_token ${t} was already granted to ${this.seen.get(t)}`);
    assert.ok(t > this.highest, `${what}: fencing_token ${t} is not above the highest earlier grant ${this.highest}`);
    this.seen.set(t, what);
    this.highest = t;
    return t;
  }

  get max(): number {
    return this.highest;
  }
}

/** Prometheus text exposition → samples; throws on any line that is not valid format. */
export function parsePrometheus(text: string): { types: Map<string, string>; samples: { name: string; labels: Record<string, string>; value: number }[] } {
  const types = new Map<string, string>();
  const samples: { name: string; labels: Record<string, string>; value: number }[] = [];
  const sampleRe = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/;
  const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      assert.ok(name && type && /^(counter|gauge|histogram|summary|untyped)$/.test(type), `bad TYPE line: ${line}`);
      types.set(name, type);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = sampleRe.exec(line);
    assert.ok(m, `not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3]) for (const l of m[3].matchAll(labelRe)) labels[l[1]!] = l[2]!;
    const raw = m[4]!;
    // prom-client writes NaN as "Nan" (e.g. the event-loop lag mean of a scrape that
    // follows another within the sampling interval); Prometheus parses it case-blind too
    const nan = /^nan$/i.test(raw);
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : nan ? NaN : Number(raw);
    assert.ok(!Number.isNaN(value) || nan, `bad sample value in: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { types, samples };
}

/** Every metric the contract names (docs/contract.md §3 "Operations", "Metrics, at least"). */
export const CONTRACT_METRICS = [
  'raftlock_raft_term', 'raftlock_raft_is_leader', 'raftlock_raft_commit_index', 'raftlock_raft_applied_index',
  'raftlock_raft_leader_changes_total', 'raftlock_raft_proposals_total', 'raftlock_raft_commit_latency_seconds',
  'raftlock_storage_sync_seconds', 'raftlock_sessions_active', 'raftlock_locks_held', 'raftlock_lock_waiters',
  'raftlock_lock_acquire_total', 'raftlock_lock_wait_seconds', 'raftlock_http_request_duration_seconds',
  'raftlock_semaphores_in_use',
] as const;

/** A gauge's value on one node. */
export async function gauge(h: ClusterHarness, id: string, name: string): Promise<number> {
  const r = await h.request(id, 'GET', '/metrics');
  assert.equal(r.status, 200);
  const s = parsePrometheus(r.text).samples.find((x) => x.name === name && Object.keys(x.labels).length === 0);
  assert.ok(s, `${name} missing on ${id}`);
  return s.value;
}

export interface RetryLog {
  /** 503 answers (with Retry-After) that were retried */
  retried503: number;
  /** network errors against a node that was stopping, retried elsewhere */
  retriedNetwork: number;
}

/**
 * Send a mutating request until it gets an answer that is not 503: a 503 with Retry-After
 * means "nothing was applied, try again" (docs/contract.md §3 "Errors"), so the same Idempotency-Key is
 * sent again, to the next node of `via`. Anything else is returned to the caller to judge.
 */
export async function sendRetrying503(
  h: ClusterHarness,
  via: () => string,
  method: string,
  path: string,
  body: unknown,
  key: string,
  log: RetryLog,
  deadlineMs = 20000,
): Promise<HarnessResponse> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const res = await h.request(via(), method, path, body, { 'idempotency-key': key });
    if (res.status !== 503) return res;
    assert.ok(res.headers.get('retry-after'), `503 without Retry-After: ${res.text}`);
    assert.equal(res.body?.error?.code, 'unavailable', res.text);
    log.retried503++;
    if (Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function uniqueKey(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

/**
 * One HTTP request with exactly this method, path and body, sent with node:http so the path
 * reaches the server as written (fetch would normalise "a/../b" away). Never throws for an
 * HTTP answer; a connection error rejects.
 */
export function rawHttp(baseUrl: string, method: string, path: string, body?: string | Uint8Array, headers: Record<string, string> = {}): Promise<{ status: number; text: string; body: unknown; headers: http.IncomingHttpHeaders }> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: Number(u.port), method, path, headers, agent: false, timeout: 30_000 }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, text, body: parsed, headers: res.headers });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Write raw bytes to a TCP port and collect whatever comes back until the peer closes
 *  (or `timeoutMs`). For protocol-level garbage that no HTTP client would send. */
export function rawTcp(baseUrl: string, bytes: Uint8Array, timeoutMs = 5000): Promise<string> {
  const u = new URL(baseUrl);
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    const sock = net.connect({ host: u.hostname, port: Number(u.port) }, () => sock.end(bytes));
    const timer = setTimeout(() => sock.destroy(), timeoutMs);
    sock.on('data', (c: Buffer) => parts.push(c));
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(parts).toString('latin1'));
    });
  });
}

/**
 * A linearizable read that must succeed: 503 (no leader for a moment) and 504 (the quorum
 * round timed out on an overloaded machine) say "try again" in the contract, so retry them
 * until `timeoutMs`; any other non-200 answer fails at once.
 */
export async function readOk(h: ClusterHarness, id: string, path: string, timeoutMs = 15_000): Promise<HarnessResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await h.request(id, 'GET', path);
    if (r.status === 200) return r;
    assert.ok((r.status === 503 || r.status === 504) && Date.now() < deadline, `GET ${path} via ${id}: ${r.status} ${r.text.slice(0, 300)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}
