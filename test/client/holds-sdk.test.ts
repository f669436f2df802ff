// The SDK's view of revocation and max hold (docs/client.md "Revocation and maximum hold"),
// over real HTTP against the real REST server and the node's service on a stand-in driver
// (test/server/services/service-fixture.ts): a lock's signal aborts before its max hold can have
// freed it, and after the keepalive that follows a revoke; client.revoke answers the grants.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, NotHolderError, RaftlockClient } from '@raftlock/client';
import { startServiceServer, type ServiceServer } from './service-server.js';

let server: ServiceServer;
let url: string;
let fx: ServiceServer['fx'];
/** every request the server got, as `METHOD path` */
const requests: string[] = [];
before(async () => {
  server = await startServiceServer((app) => app.addHook('onRequest', async (req) => void requests.push(`${req.method} ${req.url}`)));
  ({ fx, url } = server);
});
after(() => server.close());

async function aborted(signal: AbortSignal, ms: number, what: string): Promise<unknown> {
  const deadline = Date.now() + ms;
  while (!signal.aborted) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return signal.reason;
}

test('maxHoldMs: the lock is sent with max_hold_ms and its signal aborts (LockLostError) a safety margin before it runs out', async () => {
  const client = new RaftlockClient({ endpoints: [url] });
  try {
    const s = await client.session({ ttlMs: 3000 });
    const started = Date.now();
    const lock = await s.lock('held-briefly', { maxHoldMs: 1500 });
    assert.ok(lock.holdUntil < Infinity);
    assert.deepEqual(fx.app.fsm.grantsWithMaxHold().map((h) => [h.name, h.maxHoldMs]), [['held-briefly', 1500]]);
    const why = await aborted(lock.signal, 5000, 'the max-hold abort');
    assert.ok(why instanceof LockLostError && /max hold/.test(why.message), String(why));
    assert.ok(Date.now() - started < 1500, 'before the max hold ran out');
    assert.equal(lock.held, false);
    await s.close();
  } finally {
    await client.close();
  }
});

test("a re-acquire that returns a grant an earlier request of the session made keeps that grant's max hold, which the server answers as max_hold_ms (jepsen-lite seed 380155236)", async () => {
  const client = new RaftlockClient({ endpoints: [url] });
  try {
    const s = await client.session({ ttlMs: 3000 });
    // an earlier acquire of this session, with a max hold, whose answer the SDK never saw
    // (one given up on, delivered late by a relay)
    const res = await fetch(`${url}/v1/locks/given-up/acquire`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ session_id: s.id, max_hold_ms: 1500 }) });
    assert.equal(res.status, 200);
    const first = (await res.json()) as { fencing_token: number; max_hold_ms?: number };
    assert.equal(first.max_hold_ms, 1500, 'a fresh grant answers its whole max hold');
    const started = Date.now();
    const lock = await s.lock('given-up'); // asks for no max hold
    assert.equal(lock.fencingToken, first.fencing_token, 'the same grant');
    assert.ok(lock.holdUntil < Infinity, 'bounded by the grant\'s own max hold');
    const why = await aborted(lock.signal, 5000, 'the max-hold abort');
    assert.ok(why instanceof LockLostError && /max hold/.test(why.message), String(why));
    assert.ok(Date.now() - started < 1500, 'before the max hold ran out');
    await s.close();
  } finally {
    await client.close();
  }
});

test('maxHoldMs on a campaign: sent as max_hold_ms, and the leadership\'s signal aborts a safety margin before it runs out', async () => {
  const client = new RaftlockClient({ endpoints: [url] });
  try {
    const started = Date.now();
    const leader = await client.campaign('led-briefly', 'host-a', { ttlMs: 3000, maxHoldMs: 1500 });
    assert.ok(leader.holdUntil < Infinity);
    assert.deepEqual(fx.app.fsm.grantsWithMaxHold().map((h) => [h.name, h.maxHoldMs]), [['led-briefly', 1500]]);
    const why = await aborted(leader.signal, 5000, 'the max-hold abort');
    assert.ok(why instanceof LockLostError && /max hold/.test(why.message), String(why));
    assert.ok(Date.now() - started < 1500, 'before the max hold ran out');
    await leader.resign().catch(() => undefined);
  } finally {
    await client.close();
  }
});

test('revoke: client.revoke answers the grant; the holder\'s lock signal aborts after its next keepalive; a second revoke is NotHolderError', async () => {
  const client = new RaftlockClient({ endpoints: [url] });
  try {
    const s = await client.session({ ttlMs: 1000 }); // keepalives every ~330 ms
    const lock = await s.lock('stuck');
    const revoked = await client.revoke('stuck', { sessionId: s.id });
    assert.deepEqual(revoked, [{ sessionId: s.id, fencingToken: lock.fencingToken }]);
    const why = await aborted(lock.signal, 5000, 'the revocation abort');
    assert.ok(why instanceof LockLostError && /revoked/.test(why.message), String(why));
    assert.equal(s.isOpen, true, 'the session lives on');
    await assert.rejects(client.revoke('stuck', { sessionId: s.id }), NotHolderError);
    const g = await s.semaphore('pool', { limit: 2 });
    assert.deepEqual(await client.revoke('pool', { kind: 'semaphore' }), [{ sessionId: s.id, fencingToken: g.fencingToken }]);
    const semWhy = await aborted(g.signal, 5000, 'the semaphore revocation abort');
    assert.ok(semWhy instanceof LockLostError && /revoked/.test(semWhy.message), String(semWhy));
    await s.close();
  } finally {
    await client.close();
  }
});

test('revocation is learnt from the keepalive answer (it lists the grants): no read per keepalive; a grant that stands keeps its signal', async () => {
  const client = new RaftlockClient({ endpoints: [url] });
  try {
    const s = await client.session({ ttlMs: 1000 }); // keepalives every ~330 ms
    const kept = await s.lock('kept');
    const shared = await s.lock('kept-shared', { mode: 'shared' });
    const gone = await s.lock('taken');
    const permits = await s.semaphore('kept-pool', { limit: 3, permits: 2 });
    const leader = await s.campaign('led', 'v1');
    const deposed = await s.campaign('deposed', 'v2');
    const answer = await client.keepalive(s.id);
    // waiters: how many requests wait on each grant's name (contract §5 "Contention")
    assert.deepEqual(answer.grants, [
      { kind: 'election', name: 'deposed', fencingToken: deposed.fencingToken, waiters: 0 },
      { kind: 'lock', name: 'kept', fencingToken: kept.fencingToken, waiters: 0 },
      { kind: 'lock', name: 'kept-shared', fencingToken: shared.fencingToken, mode: 'shared', waiters: 0 },
      { kind: 'election', name: 'led', fencingToken: leader.fencingToken, waiters: 0 },
      { kind: 'lock', name: 'taken', fencingToken: gone.fencingToken, waiters: 0 },
      { kind: 'semaphore', name: 'kept-pool', fencingToken: permits.fencingToken, waiters: 0 },
    ]);
    const from = requests.length;
    await client.revoke('taken', { sessionId: s.id });
    await client.revoke('deposed');
    const why = await aborted(gone.signal, 5000, 'the lock revocation abort');
    assert.ok(why instanceof LockLostError && /taken .*revoked/.test(why.message), String(why));
    const lwhy = await aborted(deposed.signal, 5000, 'the leadership revocation abort');
    assert.ok(lwhy instanceof LockLostError && /leadership of election deposed .*revoked/.test(lwhy.message), String(lwhy));
    // two more keepalives: what still stands stays held
    const seen = requests.filter((r) => r.endsWith('/keepalive')).length;
    const deadline = Date.now() + 5000;
    while (requests.filter((r) => r.endsWith('/keepalive')).length < seen + 2) {
      assert.ok(Date.now() < deadline, 'two more keepalives');
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const l of [kept, shared, permits, leader]) assert.equal(l.signal.aborted, false, `${l.name} is still held`);
    const reads = requests.slice(from).filter((r) => r.startsWith('GET '));
    assert.deepEqual(reads, [], 'no read beside the keepalives');
    await s.close();
  } finally {
    await client.close();
  }
});

test('against a server whose keepalive answer lists no grants, the SDK falls back to reading the session view after keepalives', async () => {
  const seen: string[] = [];
  const old = await startServiceServer((app) => {
    app.addHook('onRequest', async (req) => void seen.push(`${req.method} ${req.url}`));
    // an older server: the keepalive answer of the contract only
    app.addHook('onSend', async (req, _reply, payload) => {
      if (!req.url.endsWith('/keepalive') || typeof payload !== 'string') return payload;
      const { session_id, ttl_ms } = JSON.parse(payload) as { session_id: string; ttl_ms: number };
      return JSON.stringify({ session_id, ttl_ms });
    });
  }, fx);
  const client = new RaftlockClient({ endpoints: [old.url] });
  try {
    const s = await client.session({ ttlMs: 1000 });
    const lock = await s.lock('old-server');
    const leader = await s.campaign('old-election', 'v');
    await client.revoke('old-server', { sessionId: s.id });
    await client.revoke('old-election');
    const why = await aborted(lock.signal, 5000, 'the revocation abort');
    assert.ok(why instanceof LockLostError && /revoked/.test(why.message), String(why));
    await aborted(leader.signal, 5000, 'the leadership revocation abort');
    assert.ok(seen.some((r) => r === `GET /v1/sessions/${s.id}`), 'read the session view');
    assert.ok(seen.some((r) => r.startsWith('GET /v1/locks/old-election/check')), 'checked the leadership token');
    await s.close();
  } finally {
    await client.close();
    await old.close();
  }
});
