// The SDK against a real 3-node cluster (ClusterHarness: real `raftlock serve` processes on
// ephemeral ports, removed in `after` even on failure): mutual exclusion under contention,
// a leader killed inside withLock, and the lease proof when every node is stopped.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ClusterHarness, delay, eventually, repoRoot } from '../support/cluster-harness.js';
import { IdempotencyKeyReusedError, LockHeldError, LockLostError, RaftlockClient, SessionLostError, type ClientOptions } from '@raftlock/client';

/** A resource that remembers the highest token it saw and refuses older ones (spec "Fencing tokens"). */
class FencedCounter {
  highest = 0;
  value = 0;
  write(token: number): void {
    if (token < this.highest) throw new Error(`stale token ${token} < ${this.highest}`);
    this.highest = token;
    this.value++;
  }
}

describe('SDK against a real 3-node cluster', () => {
  let h: ClusterHarness;
  const clients: RaftlockClient[] = [];
  const warnings: string[] = [];
  const client = (o: Partial<ClientOptions> = {}): RaftlockClient => {
    const c = new RaftlockClient({ endpoints: h.endpoints, onWarning: (m, e) => warnings.push(`${m}: ${String(e)}`), ...o });
    clients.push(c);
    return c;
  };

  before(async () => {
    h = await ClusterHarness.create();
    h.startAll();
    await h.waitForLeader();
  });
  after(async () => {
    for (const n of h?.nodes ?? []) h.resume(n.id);
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await h?.close();
  });

  it('an idempotencyKey reused for another lock or a release: IdempotencyKeyReusedError, nothing applied; the same call still gets its first answer', async () => {
    const c = client();
    const key = `sdk-bound-${Date.now()}`;
    const a = await c.acquire('sdk/bound/a', { ttlMs: 30_000, idempotencyKey: key });
    const reused = (e: unknown): boolean => e instanceof IdempotencyKeyReusedError && e.code === 'idempotency_key_reused' && e.status === 422 && e.idempotencyKey === key;
    await assert.rejects(c.acquire('sdk/bound/b', { ttlMs: 30_000, idempotencyKey: key }), reused);
    await assert.rejects(c.release('sdk/bound/a', a.sessionId, a.fencingToken, { idempotencyKey: key }), reused);
    assert.equal((await c.getLock('sdk/bound/b')).held, false);
    assert.equal((await c.getLock('sdk/bound/a')).holder?.fencingToken, a.fencingToken, 'a is still held');
    const again = await c.acquire('sdk/bound/a', { ttlMs: 30_000, idempotencyKey: key });
    assert.deepEqual([again.sessionId, again.fencingToken], [a.sessionId, a.fencingToken]);
    await c.closeSession(a.sessionId);
  });

  it("shared mode: two withLock readers overlap, a writer waits for both; session.lock(name, { mode: 'shared' })", async () => {
    const c = client();
    let inside = 0, overlapped = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const reader = (): Promise<number> => c.withLock('sdk/shared', async ({ fencingToken }) => {
      inside++;
      if (inside === 2) { overlapped = true; release(); }
      await gate;
      inside--;
      return fencingToken;
    }, { mode: 'shared', waitMs: 10_000 });
    const [t1, t2] = await Promise.all([reader(), reader()]);
    assert.ok(overlapped, 'both readers held the lock at once');
    assert.notEqual(t1, t2, 'each share its own token');
    const s = await c.session({ ttlMs: 10_000 });
    const r = await s.lock('sdk/shared2', { mode: 'shared' });
    assert.equal(r.mode, 'shared');
    const s2 = await c.session({ ttlMs: 10_000 });
    await assert.rejects(s2.lock('sdk/shared2'), /held/i, 'an exclusive acquire waits for the reader');
    await r.release();
    const w = await s2.lock('sdk/shared2');
    assert.equal(w.mode, 'exclusive');
    await s.close();
    await s2.close();
  });

  it('withSemaphore: 4 concurrent holders of a limit of 2 are never more than 2 at once, and do reach 2; tokens are distinct', async () => {
    const inside = { now: 0, max: 0 };
    const tokens = new Set<number>();
    const worker = async (c: RaftlockClient): Promise<void> => {
      for (let round = 0; round < 3; round++) {
        await c.withSemaphore('sdk/sem', async ({ fencingToken, signal, limit }) => {
          assert.equal(limit, 2);
          inside.now++;
          inside.max = Math.max(inside.max, inside.now);
          tokens.add(fencingToken);
          await delay(40); // hold a while, so holders overlap
          assert.equal(signal.aborted, false);
          inside.now--;
        }, { limit: 2, waitMs: 30_000, ttlMs: 10_000 });
      }
    };
    await Promise.all([client(), client(), client(), client()].map(worker));
    assert.ok(inside.max <= 2, `at most 2 holders at once, saw ${inside.max}`);
    assert.equal(inside.max, 2, 'two holders did overlap');
    assert.equal(tokens.size, 12, 'every grant has its own token');
    const s = await client().session({ ttlMs: 10_000 });
    const g = await s.semaphore('sdk/sem', { limit: 2, permits: 2 });
    assert.equal(g.permits, 2, 'all permits are free again');
    await g.release();
    await s.close();
  });

  it('campaign: one leader, a waiting candidate leads on resign with a larger token; proclaim, getLeader, LockHeldError.leader; signal aborts on resign and on the session end', async () => {
    const c1 = client();
    const c2 = client();
    const a = await c1.campaign('sdk/election', 'node-a', { ttlMs: 10_000 });
    assert.equal(a.value, 'node-a');
    assert.ok(a.held);
    const lost = await c2.campaign('sdk/election', 'node-b').then(() => null, (e: unknown) => e);
    assert.ok(lost instanceof LockHeldError, String(lost));
    assert.deepEqual(lost.leader, { sessionId: a.sessionId, value: 'node-a', fencingToken: a.fencingToken });
    const bP = c2.campaign('sdk/election', 'node-b', { waitMs: 20_000, ttlMs: 10_000 });
    await a.proclaim('node-a2');
    assert.equal(a.value, 'node-a2');
    assert.deepEqual(await c2.getLeader('sdk/election'), { name: 'sdk/election', leader: { sessionId: a.sessionId, value: 'node-a2', fencingToken: a.fencingToken } });
    await eventually(async () => (await c1.getLock('sdk/election')).waiters === 1, 10_000, 'b to queue');
    await a.resign();
    assert.ok(a.signal.aborted, 'resign aborts the signal');
    const b = await bP;
    assert.equal(b.value, 'node-b');
    assert.ok(b.fencingToken > a.fencingToken);
    assert.equal((await c1.getLeader('sdk/election')).leader?.sessionId, b.sessionId);
    // the session's end, seen by the keepalives, ends the leadership
    await c1.closeSession(b.sessionId);
    await eventually(async () => b.signal.aborted, 10_000, "b's signal to abort after its session ended");
    assert.equal((await c1.getLeader('sdk/election')).leader, null);
  });

  it('withLock under contention from several clients keeps mutual exclusion; tokens increase', async () => {
    const resource = new FencedCounter();
    let inside = 0;
    let maxInside = 0;
    const tokens: number[] = [];
    const N = 4;
    const K = 5;
    await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const c = client();
        for (let k = 0; k < K; k++) {
          await c.withLock(
            'contended',
            async ({ fencingToken, signal }) => {
              inside++;
              maxInside = Math.max(maxInside, inside);
              tokens.push(fencingToken);
              resource.write(fencingToken);
              await delay(5 + ((i * 7 + k * 3) % 15)); // widen the critical section
              assert.equal(signal.aborted, false);
              inside--;
            },
            { ttlMs: 3000, waitMs: 60_000, owner: `client-${i}` },
          );
        }
      }),
    );
    assert.equal(maxInside, 1, 'two callbacks ran at once');
    assert.equal(resource.value, N * K);
    for (let j = 1; j < tokens.length; j++) assert.ok(tokens[j]! > tokens[j - 1]!, `tokens not increasing: ${tokens.join(',')}`);
    const after = await client().getLock('contended');
    assert.equal(after.held, false, 'every withLock released');
  });

  it('killing the leader during withLock neither loses the lock nor runs the callback twice', async () => {
    const c = client();
    const ttlMs = 3000;
    let calls = 0;
    const leader = await h.waitForLeader();
    const others = h.nodes.map((n) => n.id).filter((id) => id !== leader);
    const token = await c.withLock(
      'survivor',
      async ({ fencingToken, signal, lock, sessionId }) => {
        calls++;
        await h.kill(leader);
        await h.waitForLeader(15_000, others);
        // Stay inside for two full ttls after the kill: the lease must have been renewed
        // through the new leader, and the signal must never have fired.
        const until = Date.now() + 2 * ttlMs;
        while (Date.now() < until) {
          assert.equal(signal.aborted, false, `lock lost: ${String(signal.reason)}`);
          await delay(50);
        }
        assert.equal(await lock.check(), true, 'the token still holds the lock');
        const info = await c.getLock('survivor');
        assert.equal(info.holder?.sessionId, sessionId);
        assert.equal(info.holder?.fencingToken, fencingToken);
        return fencingToken;
      },
      { ttlMs },
    );
    assert.equal(calls, 1, 'the callback ran exactly once');
    assert.ok(token > 0);
    assert.equal((await c.getLock('survivor')).held, false, 'released after the callback');
    h.start(leader);
    await h.waitForLeader();
  });

  it('withLock from three clients across repeated leader kills: mutual exclusion, no stale token, progress', async () => {
    let inside = 0;
    let overlaps = 0;
    let holderSignal: AbortSignal | undefined;
    let runs = 0;
    let highest = 0;
    let stale = 0;
    let stop = false;
    const failures: string[] = [];
    const workers = [0, 1, 2].map(async () => {
      const c = client();
      while (!stop) {
        try {
          await c.withLock(
            'chaos',
            async ({ fencingToken, signal }) => {
              // Entering while another callback runs is a violation unless that holder was
              // already told (its signal aborted) that it lost the lock.
              if (inside > 0 && holderSignal && !holderSignal.aborted) overlaps++;
              inside++;
              holderSignal = signal;
              runs++;
              if (fencingToken <= highest) stale++;
              highest = Math.max(highest, fencingToken);
              await delay(10);
              inside--;
            },
            { ttlMs: 3000, waitMs: 10_000 },
          );
        } catch (err) {
          // Unavailability during an election is allowed, and so is a session lost when an
          // election outlasts its lease (it is reported); safety violations are not.
          failures.push(`${(err as Error).name}: ${(err as Error).message}`);
        }
      }
    });
    try {
      for (let k = 0; k < 2; k++) {
        await eventually(async () => runs >= 3 * (k + 1), 20_000, 'progress before the kill');
        const running = h.nodes.filter((n) => n.proc).map((n) => n.id);
        const leader = await h.waitForLeader(15_000, running);
        await h.kill(leader);
        await h.waitForLeader(15_000, running.filter((id) => id !== leader));
        h.start(leader);
      }
      const before = runs;
      await eventually(async () => runs >= before + 3, 20_000, 'progress after the last kill');
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    assert.equal(overlaps, 0, 'two callbacks ran at once while the first still held the lock');
    assert.equal(stale, 0, 'a grant carried a token not above the previous one');
    assert.ok(failures.every((f) => /Unavailable|OutcomeUnknown|LockHeld|SessionLost|LockLost/.test(f)), failures.join('\n'));
    await h.waitForLeader();
  });

  it('a caller that gives up on a queued lock leaves nothing behind: when the holder releases, nobody holds it', async () => {
    const c = client();
    const holder = await c.session({ ttlMs: 30_000 });
    const quitter = await c.session({ ttlMs: 30_000 });
    try {
      const held = await holder.lock('gives-up');
      await assert.rejects(quitter.lock('gives-up', { waitMs: 20_000, signal: AbortSignal.timeout(300) }), (e: Error) => e.name === 'TimeoutError');
      assert.ok(quitter.isOpen, 'the caller\'s session stays open');
      await held.release();
      const after = await c.getLock('gives-up');
      assert.equal(after.held, false, `the wait given up on must not be granted: ${JSON.stringify(after)}`);
      assert.deepEqual((await c.getSession(quitter.id)).locks, []);
    } finally {
      await holder.close();
      await quitter.close();
    }
  });

  it('a session whose keepalives are blocked (cluster stopped) fires lost before its ttl passes', async () => {
    const c = client({ timeoutMs: 5000 });
    const ttlMs = 1500;
    const s = await c.session({ ttlMs });
    const lock = await s.lock('paused');
    let acks = 0;
    s.on('keepalive', () => acks++);
    await eventually(async () => acks >= 1, 5000, 'a keepalive');
    for (const n of h.nodes) h.pause(n.id);
    const pausedAt = performance.now();
    let lostAt: number;
    let reason: SessionLostError;
    try {
      reason = await s.lost;
      lostAt = performance.now();
    } finally {
      for (const n of h.nodes) h.resume(n.id);
    }
    const lastAck = s.lastAckSentAt;
    assert.ok(reason instanceof SessionLostError);
    assert.ok(lostAt < lastAck + ttlMs, `lost ${Math.round(lostAt - lastAck)} ms after the last acknowledged send; ttl ${ttlMs}`);
    assert.ok(lostAt >= lastAck + ttlMs - s.safetyMarginMs - 2, `lost too early: ${Math.round(lostAt - lastAck)} ms`);
    assert.ok(lostAt - pausedAt < ttlMs);
    assert.ok(lock.signal.aborted);
    assert.ok(lock.signal.reason instanceof LockLostError);
    assert.equal(lock.held, false);
    assert.throws(() => lock.assertHeld(), LockLostError);
    // Once the cluster runs again the lock frees itself (best-effort close, or expiry).
    await eventually(async () => !(await c.getLock('paused')).held, 15_000, 'the lost lock to be freed');
    await s.close();
  });

  it('examples/fenced-inventory.ts runs: a stale holder write is refused, no sale is lost', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(repoRoot, 'examples', 'fenced-inventory.ts'), '--endpoints', h.endpoints.join(',')], { cwd: repoRoot, timeout: 60_000 });
    assert.match(stdout, /stock 90 \(expected 90\)/);
    assert.match(stdout, /the inventory refused it: stale fencing token/);
    assert.match(stdout, /Final stock 89/);
  });
});
