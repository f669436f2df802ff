// The API's edge (docs/architecture.md "Layers": api/failure, api/errors): a service refuses
// with a Failure that carries no HTTP, in its Result (service-result.ts); answerOf maps the
// refusal for every route (routes/context.ts onLeader), and toApiError anything thrown. A
// refusal gets the catalog's status and the same body and Retry-After an ApiError of that
// code, message and details would have had, and a refusal answered through a route looks
// on the wire exactly as the same Failure thrown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, ERROR_CATALOG, type ErrorCode } from '../../src/api/errors.js';
import { Failure } from '../../src/api/failure.js';
import { answerOf, toApiError } from '../../src/api/failure-edge.js';
import { ok, refused } from '../../src/api/service-result.js';
import { assertError, json, makeApp } from './helpers.js';

test('every code: a Failure answers what an ApiError of the same code, message and details answers', () => {
  for (const code of Object.keys(ERROR_CATALOG) as ErrorCode[]) {
    const details = { holder: { session_id: 's', owner: 'o', fencing_token: 7 } };
    const f = new Failure(code, `the ${code} message`, { details });
    assert.ok(!('status' in f), 'a Failure has no HTTP status');
    const edge = toApiError(f);
    const direct = new ApiError(code, `the ${code} message`, { details });
    assert.equal(edge.status, ERROR_CATALOG[code].status, code);
    assert.equal(edge.status, direct.status, code);
    assert.deepEqual(edge.toBody(), direct.toBody(), code);
    assert.equal(edge.retryAfterS, direct.retryAfterS, `${code}: Retry-After`);
  }
});

test('Retry-After: 429 and 503 default to 1 s; an asked value is rounded up as an ApiError rounds it', () => {
  assert.equal(toApiError(new Failure('unavailable', 'x')).retryAfterS, 1);
  assert.equal(toApiError(new Failure('too_many_requests', 'x', { retryAfterS: 1 })).retryAfterS, 1);
  assert.equal(toApiError(new Failure('unavailable', 'x', { retryAfterS: 2.2 })).retryAfterS, 3);
  assert.equal(toApiError(new Failure('lock_held', 'x')).retryAfterS, undefined);
});

test('an ApiError is a Failure and passes the edge unchanged', () => {
  const e = new ApiError('not_found', 'gone');
  assert.ok(e instanceof Failure);
  assert.equal(toApiError(e), e);
});

test('answerOf: a value passes; a refusal becomes the ApiError toApiError makes of the same Failure', () => {
  assert.deepEqual(answerOf(ok({ name: 'L' })), { name: 'L' });
  for (const code of Object.keys(ERROR_CATALOG) as ErrorCode[]) {
    const f = new Failure(code, `the ${code} message`, { details: { limit: 3 }, retryAfterS: code === 'unavailable' ? 2.5 : undefined });
    let thrown: unknown;
    try {
      answerOf(refused(f));
    } catch (err) {
      thrown = err;
    }
    assert.ok(thrown instanceof ApiError, `${code}: an ApiError is thrown`);
    const edge = toApiError(f);
    assert.equal(thrown.status, edge.status, code);
    assert.deepEqual(thrown.toBody(), edge.toBody(), code);
    assert.equal(thrown.retryAfterS, edge.retryAfterS, `${code}: Retry-After`);
  }
});

test('a route answers a refused Result exactly as the same Failure thrown: status, body, Retry-After, leader hint', async () => {
  const failure = (): Failure => new Failure('too_many_requests', 'the lock has too many waiters', { retryAfterS: 2, details: { limit: 'waiters' } });
  const answers = [];
  for (const how of ['refused', 'thrown'] as const) {
    const { app, service } = makeApp();
    service.routingView = { isLeader: true, leaderApi: 'http://127.0.0.1:17001' };
    service.acquire = async () => {
      if (how === 'thrown') throw failure();
      return refused(failure());
    };
    try {
      const res = await app.inject({ method: 'POST', url: '/v1/locks/L/acquire', payload: {} });
      assertError(res, 429, 'too_many_requests', 'too many waiters');
      answers.push({ status: res.statusCode, body: json(res), retryAfter: res.headers['retry-after'], leader: res.headers['x-raftlock-leader'] });
    } finally {
      await app.close();
    }
  }
  assert.deepEqual(answers[0], answers[1]);
  assert.equal(answers[0]?.retryAfter, '2');
  assert.equal(answers[0]?.leader, 'http://127.0.0.1:17001');
});

