// A request of a session that already waits for the name joins that wait only if the
// wait's grant would answer it (docs/lock-fsm.md "Shared locks", no upgrade). An exclusive
// acquire sent while the session's shared acquire of the name waits used to join it and,
// once the share was granted, was answered 200 with that share: a caller that asked for
// the lock alone and did not read `mode` believed it held it alone, beside other readers.
// It is refused at once now (409 lock_held), as an exclusive acquire by a session holding
// a share is; the shared wait goes on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, setup, valueOf } from './service-fixture.js';

test('an exclusive acquire by a session whose shared acquire of the name waits is refused at once, not answered the share', async () => {
  const f = setup();
  const { session_id: a } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('oa')));
  const { session_id: b } = valueOf(await f.svc.openSession({ ttlMs: 60_000 }, f.ctx('ob')));
  valueOf(await f.svc.acquire('L', { sessionId: a, waitMs: 0 }, f.ctx('ka')));
  const reader = f.svc.acquire('L', { sessionId: b, waitMs: 5000, mode: 'shared' }, f.ctx('kr'));
  await new Promise((r) => setImmediate(r));
  let writerDone = false;
  const writer = errorOf(f.svc.acquire('L', { sessionId: b, waitMs: 5000 }, f.ctx('kw'))).finally(() => { writerDone = true; });
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.ok(writerDone, 'answered while the shared acquire still waits');
  assert.equal((await writer).code, 'lock_held');
  valueOf(await f.svc.release('L', a, undefined, f.ctx('ra')));
  const share = valueOf(await reader);
  assert.equal(share.mode, 'shared');
  // and its retry is told the same, never the share
  assert.equal((await errorOf(f.svc.acquire('L', { sessionId: b, waitMs: 5000 }, f.ctx('kw')))).code, 'lock_held');
});
