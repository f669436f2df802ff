// A grant that a late copy of a given-up acquire makes after the SDK's cleanup release
// (docs/client.md "A grant that arrives after the cleanup"): the session releases it after
// its next keepalive, by its fencing token, when no grant object of the session holds it
// and no acquire of the name is in flight. Over real HTTP against the real REST server and
// the node's service on a stand-in driver (test/server/services/service-fixture.ts); the late
// copy is the same acquire sent again with the session's id, as a paused follower's relay
// would deliver it (jepsen-lite seed 179705514's shape).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { RaftlockClient, type Lock, type Session } from '@raftlock/client';
import { startServiceServer, type ServiceServer } from './service-server.js';
import { until } from '../support/until.js';

let server: ServiceServer;
let url: string;
let fx: ServiceServer['fx'];
/** every release the server got, as `path body` */
const releases: string[] = [];
before(async () => {
  server = await startServiceServer((app) =>
    app.addHook('preHandler', async (req) => {
      if (req.url.endsWith('/release')) releases.push(`${req.url} ${JSON.stringify(req.body)}`);
    }),
  );
  ({ fx, url } = server);
});
after(() => server.close());

/** a copy of an acquire for session `sid`, delivered now (what a late relay does) */
async function lateCopy(path: string, body: Record<string, unknown>): Promise<{ fencing_token: number }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
  return (await res.json()) as { fencing_token: number };
}

/** what a test gets: a session that gave up waiting for its name (its cleanup ran, and
 *  the name is free again), its client, and the client's warnings */
interface Watching {
  client: RaftlockClient;
  s: Session;
  warnings: string[];
}

/**
 * Runs `fn` with a session that gave up on `name` (of `kind`): another session held it,
 * this one's acquire was aborted after 100 ms, and the other session let go. Closes
 * everything after, also on failure. `now`: the client's clock.
 */
async function watching(name: string, kind: 'lock' | 'semaphore', fn: (w: Watching) => Promise<void>, o: { now?: () => number; ttlMs?: number } = {}): Promise<void> {
  const warnings: string[] = [];
  const client = new RaftlockClient({ endpoints: [url], onWarning: (msg) => void warnings.push(msg), ...(o.now ? { now: o.now } : {}) });
  try {
    const s = await client.session({ ttlMs: o.ttlMs ?? 60_000 }); // no automatic keepalive during a test
    const other = await client.session({ ttlMs: 60_000 });
    const gaveUp = (e: Error) => e.name === 'TimeoutError';
    if (kind === 'lock') {
      await other.lock(name);
      await assert.rejects(s.lock(name, { waitMs: 10_000, signal: AbortSignal.timeout(100) }), gaveUp);
    } else {
      await other.semaphore(name, { limit: 1 });
      await assert.rejects(s.semaphore(name, { limit: 1, waitMs: 10_000, signal: AbortSignal.timeout(100) }), gaveUp);
    }
    await other.close();
    releases.length = 0;
    await fn({ client, s, warnings });
    await s.close();
  } finally {
    await client.close();
  }
}

/**
 * Runs `start` with the leader holding proposals back (they reach it, and wait to commit),
 * then commits them in order — also when `start` fails. What `start` returns is awaited
 * after the commit (a request whose proposal was held).
 */
async function proposalsHeld<T>(start: () => Promise<{ pending: Promise<T> }>): Promise<T> {
  fx.driver.hold = true;
  let pending: Promise<T>;
  try {
    ({ pending } = await start());
  } finally {
    fx.driver.hold = false;
    fx.driver.commitHeld();
  }
  return pending;
}

test('a lock granted to the session by a late copy of an acquire it gave up on is released after the next keepalive, by its token', () =>
  watching('late-1', 'lock', async ({ s, warnings }) => {
    const { fencing_token: token } = await lateCopy('/v1/locks/late-1/acquire', { session_id: s.id });
    assert.equal(fx.app.fsm.getLock('late-1').holder?.sessionId, s.id, 'the late copy was granted');
    await s.keepalive();
    await until(() => !fx.app.fsm.getLock('late-1').held, 5000, 'the late grant is released');
    assert.deepEqual(releases, [`/v1/locks/late-1/release ${JSON.stringify({ session_id: s.id, fencing_token: token })}`], 'one release, by the late grant\'s token');
    // reported once the release is answered (the server let go before it answered)
    await until(() => warnings.some((w) => /late copy/.test(w) && w.includes(`token ${token}`)), 5000, 'the release is reported');
    releases.length = 0;
    await s.keepalive();
    assert.deepEqual(releases, [], 'nothing left to release');
    assert.ok(s.isOpen);
  }));

test('the session leaves alone a watched name\'s grant that a lock of it holds, and a grant of a name it never gave up on', () =>
  watching('late-2', 'lock', async ({ client, s }) => {
    const late = await lateCopy('/v1/locks/late-2/acquire', { session_id: s.id });
    // the caller takes the name again: the server answers the grant the late copy made
    const lock = await s.lock('late-2');
    assert.equal(lock.fencingToken, late.fencing_token);
    // a grant taken with a one-shot call in this session, never given up on
    const mine = await client.acquire('raw-1', { sessionId: s.id });
    await s.keepalive();
    await s.keepalive();
    assert.deepEqual(releases, [], 'nothing released');
    assert.equal(lock.held, true);
    assert.equal(fx.app.fsm.getLock('late-2').holder?.fencingToken, lock.fencingToken);
    assert.equal(fx.app.fsm.getLock('raw-1').holder?.fencingToken, mine.fencingToken);
  }));

test('a semaphore granted by a late copy is released by name', () =>
  watching('late-pool', 'semaphore', async ({ s }) => {
    await lateCopy('/v1/semaphores/late-pool/acquire', { session_id: s.id, limit: 1 });
    assert.deepEqual(fx.app.fsm.getSemaphore('late-pool').holders.map((h) => h.sessionId), [s.id]);
    await s.keepalive();
    await until(() => fx.app.fsm.getSemaphore('late-pool').holders.length === 0, 5000, 'the late permits are released');
    assert.deepEqual(releases, [`/v1/semaphores/late-pool/release ${JSON.stringify({ session_id: s.id })}`]);
  }));

test('a watched name is left alone while an acquire of it is in flight in the session; that acquire gets the late grant', () =>
  watching('late-3', 'lock', async ({ s }) => {
    const late = await lateCopy('/v1/locks/late-3/acquire', { session_id: s.id });
    const lock = await proposalsHeld(async () => {
      const pending = s.lock('late-3');
      await until(() => fx.driver.heldCount() === 1, 5000, 'the acquire reached the leader');
      await s.keepalive();
      assert.deepEqual(releases, [], 'no release while the acquire is in flight');
      return { pending };
    });
    assert.equal(lock.fencingToken, late.fencing_token, 'the acquire is answered the late grant');
    await s.keepalive();
    assert.deepEqual(releases, [], 'which its lock now holds');
    assert.equal(lock.held, true);
  }));

let skew = 0;
test('a name is watched for 10 minutes: a late grant after that is left to the session\'s end', () =>
  watching('late-4', 'lock', async ({ s }) => {
    await lateCopy('/v1/locks/late-4/acquire', { session_id: s.id });
    skew += 600_001; // the client's clock passes the watch (the session is renewed below from the new time)
    await s.keepalive();
    await s.keepalive();
    assert.deepEqual(releases, [], 'nothing released after the watch ended');
    assert.equal(fx.app.fsm.getLock('late-4').holder?.sessionId, s.id);
  }, { now: () => performance.now() + skew, ttlMs: 3_600_000 })); // its proof outlasts the clock's jump

test('a watched name\'s grant that its lock is giving back is left to that release', () =>
  watching('late-5', 'lock', async ({ s }) => {
    const lock = await s.lock('late-5');
    releases.length = 0;
    let again: Promise<Lock> | undefined;
    // the release's proposal waits to commit: a keepalive still lists the grant
    await proposalsHeld(async () => {
      const pending = lock.release();
      await until(() => fx.driver.heldCount() === 1, 5000, 'the release reached the leader');
      await s.keepalive();
      // a sweep release would go out as the keepalive is answered; an acquire of another
      // kind sent after it tells whether one did (an acquire of late-5 now waits for the
      // lock's release: docs/client.md "Acquires and releases of one name at once")
      again = s.lock('late-5');
      const barrier = s.semaphore('late-5-barrier', { limit: 1 });
      await until(() => fx.driver.heldCount() === 2, 5000, 'a second proposal reached the leader');
      assert.deepEqual(fx.driver.heldKinds(), ['release', 'semAcquire'], 'no sweep release, and the acquire of late-5 waits');
      return { pending: Promise.all([pending, barrier]) };
    });
    assert.deepEqual(releases, [`/v1/locks/late-5/release ${JSON.stringify({ session_id: s.id, fencing_token: lock.fencingToken })}`], 'the lock\'s own release only');
    assert.ok(again !== undefined && (await again).held, 'the new acquire got the lock');
  }));
