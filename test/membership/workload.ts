// A running acquire/release workload for the membership tests (docs/membership.md): pairs
// of workers contend for one lock each (FIFO wait), every operation carries an
// Idempotency-Key and is retried on 503/504 and on connection errors only — any other
// failure fails the test — but a retried acquire answered 409 lock_held (its first copy's
// wait was withdrawn when a killed relay dropped it), which asks again. While holding, a worker checks with a linearizable GET that the
// lock is still its own ("every held lock intact"); mutual exclusion and per-lock token
// order are checked against the test's own record of who holds what.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ClusterHarness, HarnessResponse } from '../support/cluster-harness.js';
import { delay } from '../support/cluster-harness.js';

export interface WorkloadStats {
  grants: number;
  releases: number;
  checks: number;
  /** 503/504 answers that were retried (allowed) */
  retried503: number;
  retried504: number;
  /** connection-level failures (a killed or stopping node) that were retried elsewhere */
  retriedConn: number;
  /** sessions found ended after a 200 acquire whose grant was gone (a replayed first answer:
   *  docs/api.md "Idempotency-Key"); the worker opens a new one */
  sessionsLost: number;
  /** acquires whose retry was answered 409 lock_held: the first copy's wait was withdrawn
   *  when its connection went away (a killed relay), and the key answers what that wait came
   *  to (docs/api.md "Errors", a retry after a withdrawn wait); the worker asks again with a
   *  new key, as the SDK does */
  waitsWithdrawn: number;
  failures: string[];
}

/** a full-cluster restart under a loaded CI machine takes a while; the ops must ride it out */
const OP_BUDGET_MS = 60_000;

export class LockWorkload {
  /** node ids the workers may talk to (the test keeps it to live members) */
  targets: string[];
  readonly stats: WorkloadStats = { grants: 0, releases: 0, checks: 0, retried503: 0, retried504: 0, retriedConn: 0, sessionsLost: 0, waitsWithdrawn: 0, failures: [] };
  private stopping = false;
  private readonly running: Promise<void>[] = [];
  /** lock name → worker holding it, per the test's own record */
  private readonly holders = new Map<string, string>();
  private readonly lastToken = new Map<string, number>();
  private rr = 0;
  /** the last attempts, for the failure message */
  private readonly recent: string[] = [];

  constructor(private readonly h: ClusterHarness, targets: string[], private readonly pairs = 2) {
    this.targets = [...targets];
  }

  start(): void {
    for (let p = 0; p < this.pairs; p++) {
      for (const side of ['a', 'b']) this.running.push(this.worker(`w${p}${side}`, `mship/lock-${p}`));
    }
  }

  /** stop after the operations in flight; returns the stats (asserting nothing) */
  async stop(): Promise<WorkloadStats> {
    this.stopping = true;
    await Promise.all(this.running);
    return this.stats;
  }

  /** wait until at least `n` more grants happened (progress under a change) */
  async progress(n: number, timeoutMs = 20_000): Promise<void> {
    const want = this.stats.grants + n;
    const deadline = Date.now() + timeoutMs;
    while (this.stats.grants < want) {
      if (this.stats.failures.length > 0) throw new Error(`workload failed: ${this.stats.failures.join('; ')}`);
      if (Date.now() > deadline) throw new Error(`workload made no progress: ${this.stats.grants}/${want} grants within ${timeoutMs} ms`);
      await delay(20);
    }
  }

  assertClean(): void {
    assert.deepEqual(this.stats.failures, [], `failed lock operations: ${this.stats.failures.join('\n')}`);
    assert.ok(this.stats.grants > 0, 'the workload never got a lock');
  }

  private async worker(who: string, name: string): Promise<void> {
    try {
      const openSession = async (): Promise<string> => (await this.call(who, 'POST', '/v1/sessions', { ttl_ms: 15_000, owner: who })).body.session_id as string;
      let sessionId = await openSession();
      while (!this.stopping) {
        const g = await this.call(who, 'POST', `/v1/locks/${name}/acquire`, { session_id: sessionId, wait_ms: 15_000 });
        if (g.status === 409 && g.body.error?.code === 'lock_held' && g.retried) {
          this.stats.waitsWithdrawn++;
          continue;
        }
        if (g.status !== 200) return this.fail(`${who} acquire ${name}: ${g.status} ${g.text.slice(0, 200)}`);
        const token = g.body.fencing_token as number;
        const other = this.holders.get(name);
        if (other !== undefined) return this.fail(`${who} was granted ${name} (token ${token}) while ${other} holds it`);
        const prev = this.lastToken.get(name) ?? 0;
        if (!(token > prev)) return this.fail(`${name}: token ${token} after ${prev}`);
        this.lastToken.set(name, token);
        this.holders.set(name, who);
        this.stats.grants++;

        const c = await this.call(who, 'GET', `/v1/locks/${name}`);
        if (c.status !== 200 || c.body.holder?.session_id !== sessionId || c.body.holder?.fencing_token !== token) {
          // A retry of an acquire is answered with its first answer, the grant, even when
          // the grant has ended since (docs/api.md "Idempotency-Key"): after a stall longer
          // than the TTL (14 s once, at load ~20) the session had expired and taken the
          // grant with it. That, and only that, is allowed: the session must be gone.
          const s = await this.call(who, 'GET', `/v1/sessions/${sessionId}`);
          if (c.status === 200 && c.body.holder?.fencing_token !== token && s.status === 404) {
            this.holders.delete(name);
            this.stats.sessionsLost++;
            sessionId = await openSession();
            continue;
          }
          return this.fail(`${who} holds ${name} (token ${token}) but GET says ${c.status} ${c.text.slice(0, 200)} (its session: ${s.status})`);
        }
        this.stats.checks++;

        this.holders.delete(name); // the release may take effect before its answer arrives
        const r = await this.call(who, 'POST', `/v1/locks/${name}/release`, { session_id: sessionId, fencing_token: token });
        if (r.status !== 200) return this.fail(`${who} release ${name}: ${r.status} ${r.text.slice(0, 200)}`);
        this.stats.releases++;
      }
      await this.call(who, 'DELETE', `/v1/sessions/${sessionId}`);
    } catch (err) {
      this.fail(`${who}: ${(err as Error).message}`);
    }
  }

  private fail(msg: string): void {
    this.stats.failures.push(`${msg}\n  last attempts:\n  ${this.recent.join('\n  ')}`);
    this.stopping = true;
  }

  /** one logical operation: same Idempotency-Key on every attempt; only 503/504/conn errors retry */
  private note(line: string): void {
    this.recent.push(`${new Date().toISOString().slice(11, 23)} ${line}`);
    if (this.recent.length > 40) this.recent.shift();
  }

  /** `retried`: an earlier attempt got no answer, or 503/504 */
  private async call(who: string, method: string, path: string, body?: unknown): Promise<HarnessResponse & { retried: boolean }> {
    const key = randomUUID();
    let retried = false;
    const deadline = Date.now() + OP_BUDGET_MS;
    let last = '';
    while (Date.now() < deadline) {
      const id = this.targets[this.rr++ % this.targets.length]!;
      let res: HarnessResponse;
      try {
        res = await this.h.requestRaw(id, method, path, body === undefined ? undefined : JSON.stringify(body), {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(method === 'GET' ? {} : { 'idempotency-key': key }),
        }, 12_000);
      } catch (err) {
        retried = true;
        this.stats.retriedConn++;
        last = `${id}: ${(err as Error).message}`;
        this.note(`${who} ${method} ${path} via ${id} key ${key.slice(0, 8)}: ${last}`);
        await delay(50);
        continue;
      }
      this.note(`${who} ${method} ${path} via ${id} key ${key.slice(0, 8)}: ${res.status} ${res.text.slice(0, 160)}`);
      if (res.status === 503 || res.status === 504) {
        retried = true;
        if (res.status === 503) this.stats.retried503++;
        else this.stats.retried504++;
        last = `${id}: ${res.status} ${res.text.slice(0, 120)}`;
        await delay(50);
        continue;
      }
      return { ...res, retried };
    }
    throw new Error(`${method} ${path}: no answer within ${OP_BUDGET_MS} ms (last: ${last})`);
  }
}
