// Acquires and releases of one name at once, in one session (docs/client.md "Acquires and
// releases of one name at once"): a second acquire of a name the session holds returns the
// same grant, so a release of it ends every grant object that carries it, and an acquire
// answered while such a release was out asks again instead of handing out a grant the
// release may have ended. Over real HTTP against the real REST server and the node's
// service on a stand-in driver whose proposals the test lets commit in order
// (test/server/services/service-fixture.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { RaftlockClient, type Session } from '@raftlock/client';
import { startServiceServer, type ServiceServer } from './service-server.js';
import { until } from '../support/until.js';

let server: ServiceServer;
let url: string;
let fx: ServiceServer['fx'];
before(async () => {
  server = await startServiceServer((app) => app.addHook('onResponse', async (req) => void responded.push(`${req.method} ${req.url}`)));
  ({ fx, url } = server);
});
after(() => server.close());

/** runs `fn` with a session of a fresh client; closes both after, also on failure */
async function withSession(fn: (s: Session) => Promise<void>): Promise<void> {
  const client = new RaftlockClient({ endpoints: [url] });
  try {
    const s = await client.session({ ttlMs: 60_000 }); // no automatic keepalive during a test
    await fn(s);
    await s.close();
  } finally {
    await client.close();
  }
}

/** every response the server finished, as `METHOD url` */
const responded: string[] = [];

/**
 * Holds the leader's proposals back while `start` sends two requests, checks that they
 * reached it in the order of `kinds`, then commits the first, waits until its answer left
 * the server (`answered`: `METHOD url`), and commits the second. So the first request's
 * answer is on its way while the second one, already sent, is applied after it: what a
 * client sees when its release overtakes the answer of its acquire. Commits everything
 * held, also on failure.
 */
async function answeredBeforeSecondApplies(kinds: [string, string], answered: string, start: () => void): Promise<void> {
  fx.driver.hold = true;
  try {
    start();
    await until(() => fx.driver.heldCount() === 2, 5000, `${kinds.join(', ')} reached the leader`);
    assert.deepEqual(fx.driver.heldKinds(), kinds);
    responded.length = 0;
    fx.driver.commitFirst();
    await until(() => responded.includes(answered), 5000, `the answer to ${answered} left the server`);
  } finally {
    fx.driver.hold = false;
    fx.driver.commitHeld();
  }
}

/** Holds the leader's proposals back while `start` sends requests, waits until as many as
 *  `kinds` reached it, checks their kinds in order, then commits them (also on failure). */
async function committedInOrder(kinds: string[], start: () => void): Promise<void> {
  fx.driver.hold = true;
  try {
    start();
    await until(() => fx.driver.heldCount() === kinds.length, 5000, `${kinds.join(', ')} reached the leader`);
    assert.deepEqual(fx.driver.heldKinds(), kinds);
  } finally {
    fx.driver.hold = false;
    fx.driver.commitHeld();
  }
}

const holder = (name: string) => fx.app.fsm.getLock(name).holder;

test('releasing a lock ends every lock object of the session that carries the same grant', () =>
  withSession(async (s) => {
    const first = await s.lock('sg-1');
    const second = await s.lock('sg-1');
    assert.equal(second.fencingToken, first.fencingToken, 'the second acquire returns the session\'s grant');
    await first.release();
    assert.equal(holder('sg-1'), undefined, 'the grant is gone');
    assert.equal(second.held, false, 'so the other object is not held');
    assert.ok(second.signal.aborted);
  }));

test('an acquire answered while a release of its name was out asks again: the grant it returns is one the session holds', () =>
  withSession(async (s) => {
    const first = await s.lock('sg-2');
    let again: ReturnType<Session['lock']> | undefined;
    let released: Promise<void> | undefined;
    // the acquire reaches the leader first and is answered the session's grant; the
    // release, sent before that answer arrives, ends the grant after it
    await answeredBeforeSecondApplies(['acquire', 'release'], 'POST /v1/locks/sg-2/acquire', () => {
      again = s.lock('sg-2');
      void until(() => fx.driver.heldCount() === 1, 5000, 'the acquire reached the leader').then(() => (released = first.release()), () => undefined);
    });
    await released;
    const second = await again!;
    assert.ok(second.held);
    assert.notEqual(second.fencingToken, first.fencingToken, 'not the grant the release ended');
    assert.equal(holder('sg-2')?.fencingToken, second.fencingToken, 'the cluster agrees: the session holds the lock with this token');
  }));

test('a semaphore acquire answered while a release of the semaphore was out asks again', () =>
  withSession(async (s) => {
    const first = await s.semaphore('sg-pool', { limit: 1 });
    let again: ReturnType<Session['semaphore']> | undefined;
    let released: Promise<void> | undefined;
    await answeredBeforeSecondApplies(['semAcquire', 'semRelease'], 'POST /v1/semaphores/sg-pool/acquire', () => {
      again = s.semaphore('sg-pool', { limit: 1 });
      void until(() => fx.driver.heldCount() === 1, 5000, 'the acquire reached the leader').then(() => (released = first.release()), () => undefined);
    });
    await released;
    const second = await again!;
    assert.ok(second.held);
    const holders = fx.app.fsm.getSemaphore('sg-pool').holders;
    assert.deepEqual(holders.map((h) => [h.sessionId, h.fencingToken]), [[s.id, second.fencingToken]], 'the cluster agrees');
  }));

test('an acquire waits for a release of its name in flight in the session before it is sent', () =>
  withSession(async (s) => {
    const first = await s.lock('sg-3');
    const other = await s.semaphore('sg-3-barrier', { limit: 1 });
    let again: ReturnType<Session['lock']> | undefined;
    let released: Promise<void> | undefined;
    // the release reaches the leader; the acquire, sent right after it, must not: a later
    // request of another kind (a semaphore's release) arrives second
    await committedInOrder(['release', 'semRelease'], () => {
      released = first.release();
      again = s.lock('sg-3');
      void until(() => fx.driver.heldCount() === 1, 5000, 'the release reached the leader').then(() => other.release(), () => undefined);
    });
    await released;
    const second = await again!;
    assert.ok(second.held);
    assert.ok(second.fencingToken > first.fencingToken, 'a new grant, made after the release');
    assert.equal(holder('sg-3')?.fencingToken, second.fencingToken);
  }));
