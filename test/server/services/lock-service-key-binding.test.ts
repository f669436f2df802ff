// An Idempotency-Key replayed for a different request (docs/api.md "Idempotency"): the
// key is bound to the request that first used it — principal, operation, name, body — so
// the same key with anything else answers 422 idempotency_key_reused and changes nothing,
// and a retry that matches gets the first answer as it was, never re-labelled with the new
// request's name. Reproduced first on the real RaftLockService: "a acquires Y with the key
// of its acquire of X" answered that a held Y with X's token while b held Y, and "release
// with an acquire's key" answered 500 "unexpected result acquired".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../../src/api/errors.js';
import type { RequestContext } from '../../../src/api/service.js';
import { codeOf, errorOf, setup as fakeService, valueOf } from './service-fixture.js';

/** a request context with a key, sent by `principal` (absent: auth off) */
function as(principal: string | undefined, key?: string): RequestContext {
  return { signal: new AbortController().signal, ...(key !== undefined ? { idempotencyKey: key } : {}), ...(principal !== undefined ? { principal } : {}) };
}

test('b holds Y with token 3; a acquires X with K (token 4); a acquires Y with K: 422, and b still holds Y', async () => {
  const { svc, app, ctx } = fakeService();
  const { session_id: a } = valueOf(await svc.openSession({}, ctx()));
  const { session_id: b } = valueOf(await svc.openSession({}, ctx()));
  const y = valueOf(await svc.acquire('Y', { sessionId: b, waitMs: 0 }, ctx()));
  assert.equal(y.fencing_token, 3);
  const x = valueOf(await svc.acquire('X', { sessionId: a, waitMs: 0 }, ctx('K')));
  assert.equal(x.fencing_token, 4);
  const err = await errorOf(svc.acquire('Y', { sessionId: a, waitMs: 0 }, ctx('K')));
  assert.equal(err.code, 'idempotency_key_reused');
  assert.equal(ApiError.of(err).status, 422, 'the API answers it 422');
  assert.match(err.message, /another name/);
  assert.deepEqual(app.fsm.getLock('Y').holder, { sessionId: b, owner: '', fencingToken: 3 }, 'b still holds Y, with its token');
  assert.equal(app.fsm.lastToken, 4, 'no token was granted');
  assert.deepEqual(app.fsm.getSession(a)?.locks, ['X']);
  // the key's own request still gets its first answer
  assert.deepEqual(valueOf(await svc.acquire('X', { sessionId: a, waitMs: 0 }, ctx('K'))), x);
});

test('release Y with the key of release X: 422 and Y stays held; release with an acquire\'s key: 422, not 500', async () => {
  const { svc, app, ctx } = fakeService();
  const { session_id: a } = valueOf(await svc.openSession({}, ctx()));
  valueOf(await svc.acquire('X', { sessionId: a, waitMs: 0 }, ctx()));
  const y = valueOf(await svc.acquire('Y', { sessionId: a, waitMs: 0 }, ctx()));
  assert.deepEqual(valueOf(await svc.release('X', a, undefined, ctx('R'))), { name: 'X', released: true });
  assert.equal(await codeOf(svc.release('Y', a, undefined, ctx('R'))), 'idempotency_key_reused');
  assert.equal(app.fsm.getLock('Y').holder?.fencingToken, y.fencing_token, 'Y is still held');
  valueOf(await svc.acquire('Z', { sessionId: a, waitMs: 0 }, ctx('A')));
  const err = await errorOf(svc.release('Z', a, undefined, ctx('A')));
  assert.equal(err.code, 'idempotency_key_reused', 'was 500 internal "unexpected result acquired"');
  assert.match(err.message, /another operation/);
  assert.equal(app.fsm.getLock('Z').holder?.sessionId, a, 'Z is still held');
});

test("another principal's reuse of a key is refused and learns nothing of the first request (no session id leaks)", async () => {
  const { svc, app } = fakeService();
  const mine = valueOf(await svc.acquire('X', { ttlMs: 5000, waitMs: 0 }, as('alice', 'job-42')));
  // the very same request from another token: before, bob was answered alice's grant
  const err = await errorOf(svc.acquire('X', { ttlMs: 5000, waitMs: 0 }, as('bob', 'job-42')));
  assert.equal(err.code, 'idempotency_key_reused');
  assert.match(err.message, /another token/);
  assert.ok(!JSON.stringify(ApiError.of(err).toBody()).includes(mine.session_id), 'the error names nothing of alice\'s request');
  assert.ok(!err.message.includes('X'), 'not even the name');
  assert.equal(await codeOf(svc.acquire('X', { ttlMs: 5000, waitMs: 0 }, as(undefined, 'job-42'))), 'idempotency_key_reused', 'anonymous is another principal');
  assert.equal(app.fsm.counts().sessions, 1, 'no session was opened for bob');
  assert.deepEqual(valueOf(await svc.acquire('X', { ttlMs: 5000, waitMs: 0 }, as('alice', 'job-42'))), mine, "alice's retry gets her first answer");
});

test('a matching retry gets the first answer verbatim: its own name, token and session', async () => {
  const { svc, app, ctx } = fakeService();
  const first = valueOf(await svc.acquire('X', { ttlMs: 5000, waitMs: 0, owner: 'w1' }, ctx('K')));
  const retry = valueOf(await svc.acquire('X', { ttlMs: 5000, waitMs: 0, owner: 'w1' }, ctx('K')));
  assert.deepEqual(retry, first);
  assert.equal(app.fsm.counts().sessions, 1, 'one session: the leader drew a new id for the retry, the key answered the first');
  // the same name and operation with another body is another request
  assert.equal(await codeOf(svc.acquire('X', { ttlMs: 6000, waitMs: 0, owner: 'w1' }, ctx('K'))), 'idempotency_key_reused');
  assert.equal(await codeOf(svc.acquire('X', { ttlMs: 5000, waitMs: 0, owner: 'w2' }, ctx('K'))), 'idempotency_key_reused');
  assert.equal(await codeOf(svc.acquire('X', { ttlMs: 5000, waitMs: 0, owner: 'w1', mode: 'shared' }, ctx('K'))), 'idempotency_key_reused');
  // an explicit contract default is the same request
  assert.deepEqual(valueOf(await svc.acquire('X', { ttlMs: 5000, waitMs: 0, owner: 'w1', mode: 'exclusive' }, ctx('K'))), first);
  // and so is a retry that asks only for the wait that is left (every SDK does)
  const queued = valueOf(await svc.acquire('W', { ttlMs: 5000, waitMs: 30_000 }, ctx('Q')));
  assert.deepEqual(valueOf(await svc.acquire('W', { ttlMs: 5000, waitMs: 12_345 }, ctx('Q'))), queued);
});

test("a retry after a 504, served by another leader whose default ttl differs, is the same request", async () => {
  const one = fakeService();
  one.driver.hold = true;
  const pending = one.svc.acquire('X', { waitMs: 0 }, one.ctx('K')); // no ttl: the node's default
  await new Promise((r) => setImmediate(r));
  const [entry] = one.driver.timeOutHeld();
  assert.equal(await codeOf(pending), 'timeout');
  // the entry committed after all; the next leader has another default ttl
  const two = fakeService();
  (two.svc.d.session as { defaultTtlMs: number }).defaultTtlMs = 9000;
  two.driver.applyForeign(entry!);
  const holder = two.app.fsm.getLock('X').holder!;
  const retry = valueOf(await two.svc.acquire('X', { waitMs: 0 }, two.ctx('K')));
  assert.equal(retry.session_id, holder.sessionId, 'the first attempt\'s grant, not a 422');
  assert.equal(retry.fencing_token, holder.fencingToken);
  assert.equal(retry.ttl_ms, 2000, 'the first node\'s default, as it was applied');
  assert.equal(two.app.fsm.counts().sessions, 1);
});

test('every mutating operation binds its key: sessions, semaphores, elections, revoke', async () => {
  const { svc, app, ctx } = fakeService();
  const { session_id: s } = valueOf(await svc.openSession({ ttlMs: 3000 }, ctx('open')));
  assert.equal(app.fsm.counts().sessions, 1);
  assert.equal(await codeOf(svc.openSession({ ttlMs: 4000 }, ctx('open'))), 'idempotency_key_reused');
  assert.deepEqual(valueOf(await svc.openSession({ ttlMs: 3000 }, ctx('open'))), { session_id: s, ttl_ms: 3000 });
  assert.equal(app.fsm.counts().sessions, 1);
  const { session_id: t } = valueOf(await svc.openSession({}, ctx()));
  const sems = svc.semaphores;
  const g = valueOf(await sems.acquire('P', { sessionId: s, limit: 2, permits: 1, waitMs: 0 }, ctx('sem')));
  assert.equal(await codeOf(sems.acquire('Q', { sessionId: s, limit: 2, permits: 1, waitMs: 0 }, ctx('sem'))), 'idempotency_key_reused');
  assert.equal(await codeOf(sems.acquire('P', { sessionId: s, limit: 2, permits: 2, waitMs: 0 }, ctx('sem'))), 'idempotency_key_reused');
  assert.deepEqual(valueOf(await sems.acquire('P', { sessionId: s, limit: 2, permits: 1, waitMs: 0 }, ctx('sem'))), g);
  assert.equal(app.fsm.getSemaphore('Q').inUse, 0);
  assert.equal(await codeOf(sems.setLimit('P', 3, ctx('sem'))), 'idempotency_key_reused');
  assert.equal(app.fsm.getSemaphore('P').limit, 2);
  valueOf(await sems.setLimit('P', 3, ctx('lim')));
  assert.equal(await codeOf(sems.setLimit('P', 4, ctx('lim'))), 'idempotency_key_reused');
  assert.equal(app.fsm.getSemaphore('P').limit, 3);
  assert.equal(await codeOf(sems.release('P', s, ctx('open'))), 'idempotency_key_reused');
  assert.equal(app.fsm.getSemaphore('P').inUse, 1, 'the permit is still held');
  const el = svc.elections;
  const led = valueOf(await el.campaign('E', { sessionId: s, value: 'v1', waitMs: 0 }, ctx('camp')));
  assert.equal(await codeOf(el.campaign('E', { sessionId: s, value: 'v2', waitMs: 0 }, ctx('camp'))), 'idempotency_key_reused');
  assert.equal(await codeOf(el.proclaim('E', s, 'v3', ctx('camp'))), 'idempotency_key_reused');
  assert.equal(app.fsm.getElection('E').leader?.value, 'v1');
  valueOf(await el.proclaim('E', s, 'v4', ctx('pro')));
  assert.equal(await codeOf(el.proclaim('E', s, 'v5', ctx('pro'))), 'idempotency_key_reused');
  assert.equal(await codeOf(el.resign('E', s, ctx('pro'))), 'idempotency_key_reused');
  assert.equal(app.fsm.getElection('E').leader?.fencingToken, led.fencing_token, 'still the leader');
  valueOf(await svc.acquire('L', { sessionId: t, waitMs: 0 }, ctx()));
  assert.equal(await codeOf(svc.revoke('L', t, ctx('camp'))), 'idempotency_key_reused');
  assert.equal(await codeOf(sems.revoke('L', t, ctx('rv'))), 'not_holder', 't holds no semaphore L');
  assert.equal(await codeOf(svc.revoke('L', t, ctx('rv'))), 'idempotency_key_reused', 'a semaphore revoke and a lock revoke are two operations');
  assert.equal(app.fsm.getLock('L').holder?.sessionId, t);
  assert.equal(await codeOf(svc.closeSession(t, ctx('open'))), 'idempotency_key_reused');
  valueOf(await svc.closeSession(s, ctx('close')));
  assert.equal(await codeOf(svc.closeSession(t, ctx('close'))), 'idempotency_key_reused');
  assert.ok(app.fsm.getSession(t), 't was not closed');
});

test('the binding survives a snapshot load: a new leader restored from it refuses the reuse and replays the retry', async () => {
  const one = fakeService();
  const { session_id: a } = valueOf(await one.svc.openSession({}, one.ctx()));
  const { session_id: b } = valueOf(await one.svc.openSession({}, one.ctx()));
  valueOf(await one.svc.acquire('Y', { sessionId: b, waitMs: 0 }, one.ctx()));
  const x = valueOf(await one.svc.acquire('X', { sessionId: a, waitMs: 0 }, one.ctx('K')));
  const two = fakeService();
  two.app.restore(one.app.snapshot(), one.driver.appliedIndex);
  two.driver.appliedIndex = one.driver.appliedIndex;
  two.svc.onRoleChange(true); // it takes office with the restored state: its lessor learns the sessions
  assert.equal(await codeOf(two.svc.acquire('Y', { sessionId: a, waitMs: 0 }, two.ctx('K'))), 'idempotency_key_reused');
  assert.equal(two.app.fsm.getLock('Y').holder?.sessionId, b);
  assert.deepEqual(valueOf(await two.svc.acquire('X', { sessionId: a, waitMs: 0 }, two.ctx('K'))), x);
});
