// The SDK never leaves behind a grant its caller did not see (docs/client.md "An acquire
// that fails never leaves a grant behind"), against a stub server that grants after the
// caller gave up, answers 504 or drops the connection after granting, or refuses (the same
// for `raftlock lock` and `raftlock semaphore`: test/cli/acquire-cleanup.test.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LockHeldError, OutcomeUnknownError, UnavailableError, type Session } from '@raftlock/client';
import { stubSuite, type AcquireMode } from '../support/stub-lock-server.js';
import { until } from '../support/until.js';

describe('an acquire that fails releases the name in its session', () => {
  const sdk = stubSuite();
  const { connect, warnings } = sdk;

  /** the session is still usable: open, holding nothing, keepalives acknowledged */
  async function assertSessionFine(s: Session): Promise<void> {
    assert.ok(s.isOpen, 'the caller\'s session stays open');
    let acked = false;
    s.once('keepalive', () => (acked = true));
    await s.keepalive();
    assert.ok(acked);
  }

  it('session.lock: the server grants 300 ms after the request, the caller aborts at 100 ms → the release is sent, nothing stays held', async () => {
    sdk.stub.acquireMode = { kind: 'grant-later', delayMs: 300 };
    const s = await connect().session({ ttlMs: 60_000 });
    const t0 = performance.now();
    await assert.rejects(s.lock('L1', { waitMs: 10_000, signal: AbortSignal.timeout(100) }), (e: Error) => e.name === 'TimeoutError');
    const rel = sdk.stub.releases('L1');
    assert.equal(rel.length, 1, 'one release was sent');
    assert.deepEqual(rel[0]!.body, { session_id: s.id }, 'without a token: whatever the session holds or waits for');
    await until(() => performance.now() - t0 > 400, 2000, 'past the stub\'s grant time');
    assert.equal(sdk.stub.holders.get('L1'), undefined, 'the late grant never happened: the release withdrew the wait');
    await assertSessionFine(s);
    await s.close();
  });

  const unknowns: [string, AcquireMode, number | undefined, (e: unknown) => boolean][] = [
    ['granted, answered after the caller gave up (abort at 100 ms)', { kind: 'answer-late', delayMs: 300 }, 100, (e) => (e as Error).name === 'TimeoutError'],
    ['granted, answered 504 until the retries ran out', { kind: 'apply-then-504' }, undefined, (e) => e instanceof OutcomeUnknownError],
    ['granted, the connection broke mid-request', { kind: 'apply-then-drop' }, undefined, (e) => e instanceof OutcomeUnknownError],
  ];
  for (const [what, mode, abortMs, isErr] of unknowns) {
    it(`session.lock: ${what} → released`, async () => {
      sdk.stub.acquireMode = mode;
      const s = await connect({ retryBudgetMs: 300 }).session({ ttlMs: 60_000 });
      await assert.rejects(s.lock('L2', { waitMs: 1000, ...(abortMs !== undefined ? { signal: AbortSignal.timeout(abortMs) } : {}) }), isErr);
      assert.equal(sdk.stub.releases('L2').length > 0, true, 'a release was sent');
      assert.equal(sdk.stub.holders.get('L2'), undefined, 'the grant was released');
      await assertSessionFine(s);
      await s.close();
      sdk.stub.log.length = 0;
    });
  }

  it('session.lock: a definite "not applied" (409 lock_held, 404, 503) sends no release', async () => {
    // the default retry budget: a 503 carries Retry-After, and a 300 ms budget left the
    // session's close at the end too little time on a loaded machine (CI, 2026-12-04)
    const s = await connect().session({ ttlMs: 60_000 });
    sdk.stub.acquireMode = { kind: 'refuse', status: 409, code: 'lock_held' };
    await assert.rejects(s.lock('L3'), LockHeldError);
    sdk.stub.acquireMode = { kind: 'refuse', status: 503, code: 'unavailable' };
    await assert.rejects(s.lock('L3'), (e) => e instanceof UnavailableError && !(e instanceof OutcomeUnknownError));
    sdk.stub.acquireMode = { kind: 'refuse', status: 400, code: 'invalid_request' };
    await assert.rejects(s.lock('L3'));
    assert.equal(sdk.stub.releases('L3').length, 0);
    await s.close();
  });

  it('withLock with the caller\'s session: aborted before the late grant → fn never runs, the release is sent, the session stays open', async () => {
    sdk.stub.acquireMode = { kind: 'grant-later', delayMs: 300 };
    const c = connect();
    const s = await c.session({ ttlMs: 60_000 });
    let ran = false;
    await assert.rejects(c.withLock('L4', () => (ran = true), { session: s, waitMs: 10_000, signal: AbortSignal.timeout(100) }));
    assert.equal(ran, false);
    assert.equal(sdk.stub.releases('L4').length, 1);
    await new Promise((r) => setTimeout(r, 300)); // the stub's grant time passes (nothing to poll: it must NOT happen)
    assert.equal(sdk.stub.holders.get('L4'), undefined);
    await assertSessionFine(s);
    await s.close();
  });

  it('withLock with its own session: aborted → the session is closed, nothing stays held', async () => {
    sdk.stub.acquireMode = { kind: 'answer-late', delayMs: 300 };
    const c = connect();
    await assert.rejects(c.withLock('L5', () => undefined, { waitMs: 10_000, signal: AbortSignal.timeout(100) }));
    assert.ok(sdk.stub.log.some((l) => l.method === 'DELETE'), 'its session was closed');
    assert.equal(sdk.stub.holders.get('L5'), undefined);
  });

  it('withLock with the caller\'s session: a release that fails is retried after the next keepalive', async () => {
    sdk.stub.acquireMode = { kind: 'answer-late', delayMs: 0 };
    sdk.stub.failReleases = 1;
    const c = connect();
    const s = await c.session({ ttlMs: 900 });
    assert.equal(await c.withLock('L7', ({ fencingToken }) => fencingToken, { session: s }), sdk.stub.holders.get('L7')?.token);
    assert.ok(warnings.some((w) => w.includes('L7')), 'the failed release was reported');
    await until(() => sdk.stub.holders.get('L7') === undefined, 3000, 'the keepalives retried the release');
    assert.ok(s.isOpen);
    await s.close();
  });

  it('a cleanup release that fails is retried after the next keepalive', async () => {
    sdk.stub.acquireMode = { kind: 'apply-then-504' };
    sdk.stub.failReleases = 1;
    const s = await connect({ retryBudgetMs: 300 }).session({ ttlMs: 900 });
    await assert.rejects(s.lock('L6'), OutcomeUnknownError);
    assert.ok(sdk.stub.holders.get('L6'), 'still held after the failed cleanup');
    assert.ok(warnings.some((w) => w.includes('L6')), 'the failure was reported');
    await until(() => sdk.stub.holders.get('L6') === undefined, 3000, 'the keepalives retried the release');
    assert.ok(s.isOpen);
    await s.close();
  });
});
