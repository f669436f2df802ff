// mapFencingError (packages/client/src/stale-fencing-token.ts) on the error shapes of the
// usual drivers, built by hand here; test/postgres, test/mysql and test/redis check it on
// the real drivers' errors from real servers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mapFencingError, StaleFencingTokenError, STALE_FENCING_TOKEN_CODE, STALE_FENCING_TOKEN_SQLSTATE } from '../../src/index.js';

const stale = (e: unknown): StaleFencingTokenError => {
  assert.ok(e instanceof StaleFencingTokenError, `a StaleFencingTokenError: ${String(e)}`);
  return e;
};

test('the code is RLF01 in every store', () => {
  assert.equal(STALE_FENCING_TOKEN_CODE, 'RLF01');
  assert.equal(STALE_FENCING_TOKEN_SQLSTATE, STALE_FENCING_TOKEN_CODE);
});

test("pg: SQLSTATE RLF01, the resource and the highest token from raftlock_fence()'s DETAIL", () => {
  const err = Object.assign(new Error('raftlock: stale fencing token 4 for "a b": a holder with token 5 has written'), { code: 'RLF01', detail: 'resource=a b token=4 highest=5' });
  const e = stale(mapFencingError(err));
  assert.deepEqual([e.resource, e.token, e.highestToken, e.cause], ['a b', 4n, 5n, err]);
  assert.match(e.message, /^PostgreSQL refused the write to "a b": fencing token 4 is stale \(a holder with token 5 has written\)$/);
  // another SQLSTATE passes through untouched
  const other = Object.assign(new Error('could not serialize access'), { code: '40001' });
  assert.equal(mapFencingError(other, { resource: 'r', token: 1 }), other);
});

test('MySQL drivers: mysql2 (sqlMessage), the mariadb connector (text, and a prefixed message), a query builder prefix', () => {
  const text = 'RLF01 stale fencing token 7 (highest 9) for invoice/42';
  const mysql2 = Object.assign(new Error(text), { code: 'ER_SIGNAL_EXCEPTION', errno: 1644, sqlState: '45000', sqlMessage: text });
  const mariadb = Object.assign(new Error(`(conn:12, no: 1644, SQLState: 45000) ${text}\nsql: CALL raftlock_fence(?, ?) - parameters:['invoice/42',7]`), { errno: 1644, sqlState: '45000', text });
  const knex = Object.assign(new Error(`CALL raftlock_fence('invoice/42', 7) - ${text}`), { errno: 1644, sqlState: '45000' });
  for (const err of [mysql2, mariadb, knex]) {
    const e = stale(mapFencingError(err));
    assert.deepEqual([e.resource, e.token, e.highestToken], ['invoice/42', 7n, 9n]);
    assert.match(e.message, /^MySQL\/MariaDB refused the write to "invoice\/42"/);
  }
  // a message cut at MySQL's 128 characters: the caller's resource wins
  const cut = Object.assign(new Error('x'), { errno: 1644, sqlMessage: `RLF01 stale fencing token 7 (highest 9) for ${'r'.repeat(300)}`.slice(0, 128) });
  assert.equal(stale(mapFencingError(cut, { resource: 'r'.repeat(300), token: 7n })).resource, 'r'.repeat(300));
  // MySQL's other errors pass through
  const deadlock = Object.assign(new Error('Deadlock found when trying to get lock'), { errno: 1213, sqlState: '40001', sqlMessage: 'Deadlock found when trying to get lock' });
  assert.equal(mapFencingError(deadlock), deadlock);
});

test('Redis clients: ioredis ReplyError and node-redis ErrorReply; the fence key as resource unless the caller names it', () => {
  class ReplyError extends Error {
    command = { name: 'evalsha', args: [] };
    override name = 'ReplyError';
  }
  class ErrorReply extends Error {
    override name = 'ErrorReply';
  }
  for (const err of [new ReplyError('RLF01 stale fencing token 3 (highest 8) for {inv}:fence'), new ErrorReply('RLF01 stale fencing token 3 (highest 8) for {inv}:fence')]) {
    const bare = stale(mapFencingError(err));
    assert.deepEqual([bare.resource, bare.token, bare.highestToken], ['{inv}:fence', 3n, 8n]);
    assert.match(bare.message, /^Redis refused/);
    const named = stale(mapFencingError(err, { resource: 'inventory/widgets', token: 3 }));
    assert.equal(named.resource, 'inventory/widgets');
  }
  const usage = new ReplyError('ERR raftlock fence: token must be an integer from 0 to 9223372036854775807');
  assert.equal(mapFencingError(usage), usage);
});

test('found through `cause`, returned as is when already mapped, and never from a look-alike', () => {
  const inner = Object.assign(new Error('RLF01 stale fencing token 1 (highest 2) for r'), { name: 'ReplyError' });
  const outer = new Error('the sale failed', { cause: inner });
  const e = stale(mapFencingError(outer));
  assert.equal(e.cause, outer, 'the caller\'s error stays the cause');
  assert.equal(mapFencingError(e), e);
  const deep = new Error('1', { cause: new Error('2', { cause: new Error('3', { cause: new Error('4', { cause: inner }) }) }) });
  assert.equal(mapFencingError(deep), deep, 'at most four levels of cause are searched');
  for (const notStale of [
    new Error('XRLF01 stale fencing token 1 (highest 2)'),
    new Error('RLF01'),
    new Error('stale fencing token 1 (highest 2)'),
    'RLF01 stale fencing token 1 (highest 2)',
    null,
    undefined,
    42,
  ]) {
    assert.equal(mapFencingError(notStale), notStale, String(notStale));
  }
  // a bad token in the context falls back to the one the store named
  assert.equal(stale(mapFencingError(inner, { token: 1.5 })).token, 1n);
});
