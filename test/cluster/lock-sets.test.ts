// Lock sets, deadlock detection and contention on a real 3-node cluster (docs/contract.md
// §5), every scenario through a follower and through the leader:
//  - two services transferring between the same two accounts in opposite order, with
//    per-name acquires: the wait that closes the cycle gets 409 deadlock at once (not after
//    its wait_ms), naming the cycle; the other goes on; every node counts it;
//  - the same services with acquire-all (withLocks): never a deadlock, never a set partly
//    held (each account's writes are fenced by its own token), the total conserved;
//  - a holder sees who waits (lock.contended, the 'contended' event) from its keepalives;
//  - a lockAll given up while queued leaves neither a wait nor a grant behind;
//  - the REST bodies: 409 lock_held with `blocked`, 400 for a repeated name, release-all.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DeadlockError, LockHeldError, RaftlockClient, type ClientOptions } from '@raftlock/client';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';
import { parsePrometheus } from './helpers.js';

/** an account that takes a write only with a token at least as high as every earlier one */
class Account {
  highest = 0;
  inside = 0;
  constructor(public balance: number) {}
  write(token: number, delta: number): void {
    if (token < this.highest) throw new Error(`stale token ${token} < ${this.highest}`);
    this.highest = token;
    this.balance += delta;
  }
}

describe('lock sets and deadlocks on a real 3-node cluster', { timeout: 180_000 }, () => {
  let h: ClusterHarness;
  let leaderId: string;
  let followerId: string;
  const clients: RaftlockClient[] = [];
  const client = (id: string, o: Partial<ClientOptions> = {}): RaftlockClient => {
    const c = new RaftlockClient({ endpoints: [h.node(id).api], ...o });
    clients.push(c);
    return c;
  };

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3, session: { default_ttl_ms: 60_000 } });
    h.startAll();
    leaderId = await h.waitForLeader();
    followerId = h.nodes.map((n) => n.id).find((x) => x !== leaderId) as string;
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await h?.close();
  });

  it('per-name acquires in opposite order: the closing wait gets 409 deadlock at once with the cycle; the other goes on; every node counts it', async () => {
    const a = client(leaderId);
    const b = client(followerId);
    const sa = await a.session({ ttlMs: 30_000 });
    const sb = await b.session({ ttlMs: 30_000 });
    await sa.lock('xfer/accounts/1');
    const b2 = await sb.lock('xfer/accounts/2');
    const aWaits = sa.lock('xfer/accounts/2', { waitMs: 30_000 });
    await eventually(async () => (await a.getLock('xfer/accounts/2')).waiters === 1, 10_000, 'a to wait for accounts/2');
    const t0 = Date.now();
    const err = await sb.lock('xfer/accounts/1', { waitMs: 30_000 }).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof DeadlockError, `expected DeadlockError, got ${String(err)}`);
    assert.ok(Date.now() - t0 < 10_000, `refused at once, not after its 30 s wait (${Date.now() - t0} ms)`);
    assert.equal(err.status, 409);
    assert.deepEqual(err.cycle, [{ sessionId: sb.id, name: 'xfer/accounts/1' }, { sessionId: sa.id, name: 'xfer/accounts/2' }]);
    // nothing changed: b still holds accounts/2 and does not wait; a still waits
    assert.deepEqual((await b.getSession(sb.id)).locks, ['xfer/accounts/2']);
    assert.equal((await a.getLock('xfer/accounts/1')).waiters, 0);
    await b2.release();
    const got = await aWaits;
    assert.equal(got.name, 'xfer/accounts/2');
    for (const n of h.nodes) {
      await eventually(async () => {
        const m = parsePrometheus((await h.request(n.id, 'GET', '/metrics')).text);
        return m.samples.find((x) => x.name === 'raftlock_deadlocks_total')?.value === 1;
      }, 10_000, `raftlock_deadlocks_total 1 on ${n.id}`);
    }
    await sa.close();
    await sb.close();
  });

  it('acquire-all in opposite orders from two services never deadlocks, never holds a set partly, and conserves the total', async () => {
    const accounts = new Map([['bank/accounts/1', new Account(1000)], ['bank/accounts/2', new Account(1000)]]);
    const transfer = async (c: RaftlockClient, from: string, to: string, rounds: number): Promise<void> => {
      for (let i = 0; i < rounds; i++) {
        await c.withLocks([from, to], async ({ fencingTokens, signal }) => {
          const f = accounts.get(from) as Account;
          const t = accounts.get(to) as Account;
          f.inside++;
          t.inside++;
          try {
            assert.equal(f.inside, 1, `${from} held by two at once`);
            assert.equal(t.inside, 1, `${to} held by two at once`);
            await new Promise((r) => setTimeout(r, 5));
            signal.throwIfAborted();
            f.write(fencingTokens[from] as number, -7);
            t.write(fencingTokens[to] as number, +7);
          } finally {
            f.inside--;
            t.inside--;
          }
        }, { ttlMs: 20_000, waitMs: 60_000 });
      }
    };
    await Promise.all([
      transfer(client(leaderId), 'bank/accounts/1', 'bank/accounts/2', 12),
      transfer(client(followerId), 'bank/accounts/2', 'bank/accounts/1', 12),
      transfer(client(followerId), 'bank/accounts/2', 'bank/accounts/1', 6),
    ]);
    const total = [...accounts.values()].reduce((s, x) => s + x.balance, 0);
    assert.equal(total, 2000, 'the total is conserved');
    assert.equal(accounts.get('bank/accounts/1')?.balance, 1000 - 7 * 12 + 7 * 18);
  });

  it('a holder learns from its keepalives that someone waits: lock.contended, the contended event, on a lock and on a set', async () => {
    const holder = client(leaderId);
    const other = client(followerId);
    const s = await holder.session({ ttlMs: 3000 });
    const set = await s.lockAll(['contend/a', 'contend/b']);
    const single = await s.lock('contend/c');
    assert.equal(set.contended, false);
    const onSet = new Promise<{ name: string; waiters: number }>((resolve) => set.once('contended', (e) => resolve({ name: e.lock.name, waiters: e.waiters })));
    const onLock = new Promise<number>((resolve) => single.once('contended', (e) => resolve(e.waiters)));
    const so = await other.session({ ttlMs: 30_000 });
    const waitB = so.lock('contend/b', { waitMs: 30_000 });
    const waitC = so.lock('contend/c', { waitMs: 30_000 });
    assert.deepEqual(await onSet, { name: 'contend/b', waiters: 1 });
    assert.equal(await onLock, 1);
    assert.equal(set.lock('contend/b').contended, true);
    assert.equal(set.lock('contend/a').contended, false);
    assert.equal(single.waiters, 1);
    await set.release();
    await single.release();
    await waitB;
    await waitC;
    await s.close();
    await so.close();
  });

  it('a lockAll given up while queued leaves neither a wait nor a grant behind', async () => {
    const holder = client(leaderId);
    const waiter = client(followerId);
    const sh = await holder.session({ ttlMs: 30_000 });
    const held = await sh.lock('gone/q1');
    const sw = await waiter.session({ ttlMs: 30_000 });
    const ac = new AbortController();
    const p = sw.lockAll(['gone/q1', 'gone/q2'], { waitMs: 30_000, signal: ac.signal });
    await eventually(async () => (await waiter.getLock('gone/q2')).waiters === 1, 10_000, 'the set to hold its place on gone/q2');
    ac.abort();
    await assert.rejects(p);
    await eventually(async () => (await waiter.getLock('gone/q1')).waiters === 0 && (await waiter.getLock('gone/q2')).waiters === 0, 10_000, 'the wait to be withdrawn');
    await held.release();
    assert.equal((await waiter.getLock('gone/q1')).held, false);
    assert.deepEqual((await waiter.getSession(sw.id)).locks, []);
    await sh.close();
    await sw.close();
  });

  it('REST through a follower and the leader: 409 lock_held with blocked, 400 for a repeat, release-all; lock sets in the keepalive', async () => {
    const open = await h.request(followerId, 'POST', '/v1/sessions', { ttl_ms: 30_000 });
    const sid = open.body.session_id as string;
    const other = await h.request(leaderId, 'POST', '/v1/locks/acquire-all', { names: ['rest/x', 'rest/y'] });
    assert.equal(other.status, 200, other.text);
    assert.deepEqual(other.body.grants.map((g: { name: string }) => g.name), ['rest/x', 'rest/y']);
    const refused = await h.request(followerId, 'POST', '/v1/locks/acquire-all', { names: ['rest/y', 'rest/z'], session_id: sid, wait_ms: 0 });
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.error.code, 'lock_held');
    assert.deepEqual(refused.body.error.blocked, [{ name: 'rest/y', holder: { session_id: other.body.session_id, owner: '', fencing_token: other.body.grants[1].fencing_token } }]);
    const bad = await h.request(followerId, 'POST', '/v1/locks/acquire-all', { names: ['rest/z', 'rest/z'], session_id: sid });
    assert.equal(bad.status, 400, bad.text);
    const mine = await h.request(followerId, 'POST', '/v1/locks/acquire-all', { names: ['rest/z', 'rest/w'], session_id: sid }, { 'idempotency-key': `rest-${sid}` });
    assert.equal(mine.status, 200, mine.text);
    const again = await h.request(leaderId, 'POST', '/v1/locks/acquire-all', { names: ['rest/z', 'rest/w'], session_id: sid }, { 'idempotency-key': `rest-${sid}` });
    assert.deepEqual(again.body.grants, mine.body.grants, 'a retry with the key answers the same grants');
    const ka = await h.request(leaderId, 'POST', `/v1/sessions/${sid}/keepalive`);
    assert.deepEqual(ka.body.grants.map((g: { name: string; waiters: number }) => [g.name, g.waiters]), [['rest/w', 0], ['rest/z', 0]]);
    const rel = await h.request(leaderId, 'POST', '/v1/locks/release-all', { names: ['rest/w', 'rest/x', 'rest/z'], session_id: sid });
    assert.deepEqual(rel.body, { released: ['rest/w', 'rest/z'] });
    // a waiting LockHeldError from the SDK carries blocked too
    const c = client(followerId);
    const err = await c.acquireAll(['rest/x', 'rest/q'], { waitMs: 200 }).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof LockHeldError && err.blocked?.[0]?.name === 'rest/x', String(err));
  });
});
