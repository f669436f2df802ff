// A retry with the same Idempotency-Key returns the first answer and changes nothing
// (docs/contract.md "Idempotency"), on every mutating route, whatever happened between the
// first request and the retry. Found from outside: S1 acquired L with key K1 (200, token
// t), released it, S2 acquired L, and S1's retry with K1 answered 409 lock_held: the
// leader checked the stored grant against the lock's current state before answering.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { codeOf, setup as fakeService, valueOf } from './service-fixture.js';

test('a replayed acquire key returns its first 200 and token after the lock moved to another session', async () => {
  const { svc, app, ctx } = fakeService();
  const { session_id: s1 } = valueOf(await svc.openSession({}, ctx('o1')));
  const { session_id: s2 } = valueOf(await svc.openSession({}, ctx('o2')));
  const first = valueOf(await svc.acquire('L', { sessionId: s1, waitMs: 0 }, ctx('K1')));
  valueOf(await svc.release('L', s1, first.fencing_token, ctx('r1')));
  const other = valueOf(await svc.acquire('L', { sessionId: s2, waitMs: 0 }, ctx('K2')));
  const retry = valueOf(await svc.acquire('L', { sessionId: s1, waitMs: 0 }, ctx('K1')));
  assert.deepEqual(retry, first, 'the original 200, token and all');
  assert.equal(app.fsm.getLock('L').holder?.sessionId, s2, 'S2 still holds L');
  assert.equal(app.fsm.getLock('L').holder?.fencingToken, other.fencing_token);
});

test('a replayed acquire without a session returns the same new session and token, and opens no second session', async () => {
  const { svc, app, ctx } = fakeService();
  const first = valueOf(await svc.acquire('L', { ttlMs: 5000, waitMs: 0 }, ctx('K')));
  valueOf(await svc.closeSession(first.session_id, ctx('c')));
  const retry = valueOf(await svc.acquire('L', { ttlMs: 5000, waitMs: 0 }, ctx('K')));
  assert.deepEqual(retry, first);
  assert.equal(app.fsm.counts().sessions, 0, 'nothing was opened again');
  assert.equal(app.fsm.getLock('L').held, false);
});

test('a replayed key of an acquire that waited and was granted returns that grant after the lock moved on', async () => {
  const { svc, app, ctx } = fakeService();
  const { session_id: a } = valueOf(await svc.openSession({}, ctx('oa')));
  const { session_id: b } = valueOf(await svc.openSession({}, ctx('ob')));
  const { session_id: c } = valueOf(await svc.openSession({}, ctx('oc')));
  valueOf(await svc.acquire('L', { sessionId: a, waitMs: 0 }, ctx('ka')));
  const waiting = svc.acquire('L', { sessionId: b, waitMs: 10_000 }, ctx('kb'));
  valueOf(await svc.release('L', a, undefined, ctx('ra')));
  const granted = valueOf(await waiting);
  assert.equal(granted.session_id, b);
  valueOf(await svc.release('L', b, undefined, ctx('rb')));
  valueOf(await svc.acquire('L', { sessionId: c, waitMs: 0 }, ctx('kc')));
  const retry = valueOf(await svc.acquire('L', { sessionId: b, waitMs: 10_000 }, ctx('kb')));
  assert.deepEqual(retry, granted, 'the grant it was answered with, not a new wait');
  assert.equal(app.fsm.getLock('L').holder?.sessionId, c);
  assert.equal(app.fsm.getLock('L').waiters, 0, 'b did not queue again');
});

test('a replayed acquire whose grant still stands renews the lease as the first answer did', async () => {
  const { svc, lessor, ctx, tick, now } = fakeService();
  const { session_id: s } = valueOf(await svc.openSession({ ttlMs: 2000 }, ctx('o')));
  const first = valueOf(await svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('K')));
  tick(1500);
  assert.deepEqual(valueOf(await svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('K'))), first);
  assert.equal(lessor.deadlineOf(s), now() + 2000, 'renewed from the retry');
});

test('a replayed acquire key answered lock_held first answers lock_held again, even once the lock is free', async () => {
  const { svc, ctx } = fakeService();
  const { session_id: s1 } = valueOf(await svc.openSession({}, ctx('o1')));
  const { session_id: s2 } = valueOf(await svc.openSession({}, ctx('o2')));
  valueOf(await svc.acquire('L', { sessionId: s1, waitMs: 0 }, ctx('k1')));
  assert.equal(await codeOf(svc.acquire('L', { sessionId: s2, waitMs: 0 }, ctx('K'))), 'lock_held');
  valueOf(await svc.release('L', s1, undefined, ctx('r1')));
  assert.equal(await codeOf(svc.acquire('L', { sessionId: s2, waitMs: 0 }, ctx('K'))), 'lock_held', 'the first answer, and nothing acquired');
});

test('a replayed release key returns its first 200 and does not release a later grant', async () => {
  const { svc, app, ctx } = fakeService();
  const { session_id: s } = valueOf(await svc.openSession({}, ctx('o')));
  valueOf(await svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('k1')));
  const first = valueOf(await svc.release('L', s, undefined, ctx('R')));
  const again = valueOf(await svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('k2')));
  assert.deepEqual(valueOf(await svc.release('L', s, undefined, ctx('R'))), first);
  assert.equal(app.fsm.getLock('L').holder?.fencingToken, again.fencing_token, 'the later grant stands');
});

test('a replayed session close returns its first answer, not session_not_found', async () => {
  const { svc, ctx } = fakeService();
  const { session_id: s } = valueOf(await svc.openSession({}, ctx('o')));
  valueOf(await svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('k')));
  const first = valueOf(await svc.closeSession(s, ctx('C')));
  assert.deepEqual(first, { released: ['L'] });
  assert.deepEqual(valueOf(await svc.closeSession(s, ctx('C'))), first);
  assert.equal(await codeOf(svc.closeSession(s, ctx('C2'))), 'session_not_found', 'a new key sees the state');
});

test('a replayed session open returns the same session and opens no other', async () => {
  const { svc, app, ctx } = fakeService();
  const first = valueOf(await svc.openSession({ ttlMs: 3000 }, ctx('O')));
  valueOf(await svc.closeSession(first.session_id, ctx('c')));
  assert.deepEqual(valueOf(await svc.openSession({ ttlMs: 3000 }, ctx('O'))), first);
  assert.equal(app.fsm.counts().sessions, 0);
});

test('an acquire retried after an unknown outcome, with the first copy applied late, answers the first grant', async () => {
  const { svc, driver, app, ctx } = fakeService();
  const { session_id: s1 } = valueOf(await svc.openSession({}, ctx('o1')));
  const { session_id: s2 } = valueOf(await svc.openSession({}, ctx('o2')));
  driver.hold = true;
  const first = codeOf(svc.acquire('L', { sessionId: s1, waitMs: 0 }, ctx('K1')));
  const [late] = driver.timeOutHeld();
  assert.equal(await first, 'timeout');
  driver.hold = false;
  driver.applyForeign(late!); // the first copy commits after all
  const token = app.fsm.getLock('L').holder!.fencingToken;
  valueOf(await svc.release('L', s1, undefined, ctx('r')));
  valueOf(await svc.acquire('L', { sessionId: s2, waitMs: 0 }, ctx('K2')));
  const retry = valueOf(await svc.acquire('L', { sessionId: s1, waitMs: 0 }, ctx('K1')));
  assert.equal(retry.fencing_token, token, 'the grant the first copy made');
  assert.equal(app.fsm.getLock('L').holder?.sessionId, s2);
});

test('keepalive and renew are not logged: a retry answers what is true now (a key changes nothing)', async () => {
  const { svc, ctx } = fakeService();
  const { session_id: s } = valueOf(await svc.openSession({}, ctx('o')));
  valueOf(await svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('k')));
  assert.equal((valueOf(await svc.keepalive(s, ctx('KA')))).session_id, s);
  assert.equal((valueOf(await svc.renew('L', s, ctx('RN')))).session_id, s);
  valueOf(await svc.release('L', s, undefined, ctx('r')));
  assert.equal(await codeOf(svc.renew('L', s, ctx('RN'))), 'not_holder', 'a renewed lease that is gone is not reported alive');
  valueOf(await svc.closeSession(s, ctx('c')));
  assert.equal(await codeOf(svc.keepalive(s, ctx('KA'))), 'session_not_found');
});
