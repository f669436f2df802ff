// An acquire the server refuses at once, though it asked to wait, is not asked again
// (packages/client/src/outcome.ts waitRanOut). The SDK re-queues a wait that ran out
// before the caller's (a wait longer than one request's), and took every lock_held or
// semaphore_full for one: an exclusive lock() by a session holding a share of the name
// (a share is never upgraded), or sent while the session's shared acquire of it waited
// (docs/api.md "Waits"), was sent again the moment its refusal came, in a loop for the
// whole wait — 432 requests in one second against a one-node server. Over real HTTP
// against the real REST server on the stand-in driver (service-server.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockHeldError, RaftlockClient, type Session } from '@raftlock/client';
import { startServiceServer, type ServiceServer } from './service-server.js';
import { until } from '../support/until.js';

let server: ServiceServer;
const acquires = new Map<string, number>();
before(async () => {
  server = await startServiceServer((app) => app.addHook('onRequest', async (req) => {
    const m = /^\/v1\/locks\/([^/]+)\/acquire$/.exec(req.url);
    if (req.method === 'POST' && m) acquires.set(m[1]!, (acquires.get(m[1]!) ?? 0) + 1);
  }));
});
after(() => server.close());

async function withSessions(fn: (s: Session, other: Session) => Promise<void>): Promise<void> {
  const client = new RaftlockClient({ endpoints: [server.url] });
  try {
    const s = await client.session({ ttlMs: 60_000 });
    const other = await client.session({ ttlMs: 60_000 });
    await fn(s, other);
    await s.close();
    await other.close();
  } finally {
    await client.close();
  }
}

test('an exclusive lock() by a session holding a share is refused after one request, not asked again for its whole wait', async () => {
  await withSessions(async (s) => {
    await s.lock('Z', { mode: 'shared' });
    const before = acquires.get('Z') ?? 0;
    await assert.rejects(s.lock('Z', { waitMs: 2000 }), LockHeldError);
    assert.equal((acquires.get('Z') ?? 0) - before, 1, 'one request');
  });
});

test('an exclusive lock() while the session\'s shared lock() of the name waits is refused after one request; the shared one is granted later', async () => {
  await withSessions(async (s, other) => {
    const held = await other.lock('X');
    const reader = s.lock('X', { mode: 'shared', waitMs: 30_000 });
    // the reader's request is in (it waits on the server)
    await until(() => acquires.get('X') === 2, 5000, 'the holder\'s and the reader\'s acquires reached the server');
    await assert.rejects(s.lock('X', { waitMs: 2000 }), LockHeldError);
    assert.equal(acquires.get('X'), 3, 'one request for the refused one');
    await held.release();
    const share = await reader;
    assert.equal(share.mode, 'shared');
    assert.ok(share.held);
  });
});
