// session.semaphore and client.withSemaphore against a stub server (stub-lock-server.ts):
// grants, release, the typed errors, and the rule that an acquire that fails never leaves
// a grant behind (docs/client.md) — including a wait the server grants after the caller
// gave up, which a release did not withdraw on servers of earlier versions (the stub acts as one).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LimitMismatchError, LockLostError, OutcomeUnknownError, SemaphoreFullError, UnavailableError } from '@raftlock/client';
import { stubSuite } from '../support/stub-lock-server.js';
import { until } from '../support/until.js';

describe('SDK semaphores', () => {
  const sdk = stubSuite((stub) => {
    stub.semMode = { kind: 'serve' };
    stub.log.length = 0;
  });
  const { connect } = sdk;

  it('acquire → a grant with token, permits, limit and a live signal; release gives the permits back and aborts the signal first', async () => {
    const s = await connect().session({ ttlMs: 60_000 });
    const g = await s.semaphore('S1', { limit: 3, permits: 2 });
    assert.equal(g.permits, 2);
    assert.equal(g.limit, 3);
    assert.ok(Number.isSafeInteger(g.fencingToken) && g.fencingToken > 0);
    assert.equal(g.signal.aborted, false);
    assert.ok(g.held);
    assert.equal(sdk.stub.inUse('S1'), 2);
    const acq = sdk.stub.log.find((l) => l.url === '/v1/semaphores/S1/acquire');
    assert.deepEqual(acq?.body, { limit: 3, permits: 2, session_id: s.id, wait_ms: 0 });
    await g.release();
    assert.ok(g.signal.aborted && g.signal.reason instanceof LockLostError);
    assert.equal(sdk.stub.inUse('S1'), 0);
    assert.deepEqual(sdk.stub.semReleases('S1').map((l) => l.body), [{ session_id: s.id }]);
    await g.release(); // twice is a no-op
    assert.equal(sdk.stub.semReleases('S1').length, 1);
    await s.close();
  });

  it('a second acquire in the same session is the same holding: releasing either grant aborts both signals', async () => {
    const s = await connect().session({ ttlMs: 60_000 });
    const a = await s.semaphore('S8', { limit: 3 });
    const b = await s.semaphore('S8', { limit: 3 });
    await a.release();
    assert.equal(sdk.stub.inUse('S8'), 0, 'the one release gave back all of the session\'s permits');
    assert.ok(b.signal.aborted, 'the other grant no longer claims to hold them');
    assert.equal(b.held, false);
    await s.close();
  });

  it('full → SemaphoreFullError with inUse and limit; another limit → LimitMismatchError with limit; neither sends a release', async () => {
    const c = connect();
    const a = await c.session({ ttlMs: 60_000 });
    const b = await c.session({ ttlMs: 60_000 });
    await a.semaphore('S2', { limit: 2, permits: 2 });
    await assert.rejects(b.semaphore('S2', { limit: 2 }), (e: unknown) => e instanceof SemaphoreFullError && e.inUse === 2 && e.limit === 2 && e.status === 409);
    await assert.rejects(b.semaphore('S2', { limit: 5 }), (e: unknown) => e instanceof LimitMismatchError && e.limit === 2);
    assert.equal(sdk.stub.semReleases('S2').length, 0);
    await a.close();
    await b.close();
  });

  it('bad limit or permits → InvalidRequestError before any request', async () => {
    const s = await connect().session({ ttlMs: 60_000 });
    await assert.rejects(s.semaphore('S3', { limit: 0 }), /limit must be/);
    await assert.rejects(s.semaphore('S3', { limit: 2, permits: 3 }), /permits must be/);
    await assert.rejects(s.semaphore('S3', { limit: 1.5 }), /limit must be/);
    assert.equal(sdk.stub.log.filter((l) => l.url.startsWith('/v1/semaphores/')).length, 0);
    await s.close();
  });

  it('aborted while the server will grant 300 ms later → released at once, and again once the late grant happened (a release does not withdraw the wait)', async () => {
    sdk.stub.semMode = { kind: 'grant-later', delayMs: 300 };
    const s = await connect().session({ ttlMs: 60_000, keepaliveIntervalMs: 100 });
    await assert.rejects(s.semaphore('S4', { limit: 2, waitMs: 10_000, signal: AbortSignal.timeout(100) }), (e: Error) => e.name === 'TimeoutError');
    assert.equal(sdk.stub.semReleases('S4').length, 1, 'the cleanup release was sent before the acquire threw');
    await until(() => sdk.stub.semGrantLog.some((g) => g.name === 'S4' && g.sessionId === s.id), 5000, 'the stub granted the abandoned wait');
    await until(() => sdk.stub.inUse('S4') === 0, 3000, 'the keepalives released the late grant');
    assert.ok(s.isOpen);
    await s.close();
  });

  for (const [what, mode] of [['504 until the retries ran out', { kind: 'apply-then-504' }], ['the connection broke mid-request', { kind: 'apply-then-drop' }]] as const) {
    it(`granted, ${what} → OutcomeUnknownError and the grant is released`, async () => {
      sdk.stub.semMode = mode;
      const s = await connect({ retryBudgetMs: 300 }).session({ ttlMs: 60_000 });
      await assert.rejects(s.semaphore('S5', { limit: 2, waitMs: 1000 }), OutcomeUnknownError);
      assert.ok(sdk.stub.semReleases('S5').length > 0);
      assert.equal(sdk.stub.inUse('S5'), 0);
      await s.close();
    });
  }

  it('a definite "not applied" (503 only) sends no release', async () => {
    sdk.stub.semMode = { kind: 'refuse', status: 503, code: 'unavailable' };
    // the default retry budget: a 503 carries Retry-After, and a 300 ms budget left the
    // session's close at the end too little time on a loaded machine (CI, 2026-12-04)
    const s = await connect().session({ ttlMs: 60_000 });
    await assert.rejects(s.semaphore('S6', { limit: 2 }), (e) => e instanceof UnavailableError && !(e instanceof OutcomeUnknownError));
    assert.equal(sdk.stub.semReleases('S6').length, 0);
    await s.close();
  });

  it('withSemaphore: fn gets token/permits/limit, the permits are released in finally, also when fn throws', async () => {
    const c = connect();
    const s = await c.session({ ttlMs: 60_000 });
    const seen = await c.withSemaphore('S7', (ctx) => ({ permits: ctx.permits, limit: ctx.limit, inUse: sdk.stub.inUse('S7'), token: ctx.fencingToken }), { limit: 4, permits: 3, session: s });
    assert.equal(seen.permits, 3);
    assert.equal(seen.limit, 4);
    assert.equal(seen.inUse, 3);
    assert.equal(sdk.stub.inUse('S7'), 0);
    await assert.rejects(c.withSemaphore('S7', () => { throw new Error('boom'); }, { limit: 4, session: s }), /boom/);
    assert.equal(sdk.stub.inUse('S7'), 0);
    assert.ok(s.isOpen);
    await s.close();
    // its own session: closed at the end, which frees the permits
    await c.withSemaphore('S7', () => undefined, { limit: 4 });
    assert.ok(sdk.stub.log.some((l) => l.method === 'DELETE'));
    assert.equal(sdk.stub.inUse('S7'), 0);
  });
});
