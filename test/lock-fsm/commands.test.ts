// parseEnvelope: every field checked after msgpack decoding; a clear error names the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidCommandError, parseCommand, parseEnvelope, utf8Length } from '../../src/lock-fsm/index.js';
import { decode, encode } from './helpers.js';

const good = [
  { atMs: 1, cmd: { kind: 'openSession', sessionId: 'abc-123_~.', ttlMs: 1000, owner: 'ünïcødé 🔒', lockDelayMs: 0 } },
  { atMs: 1, idempotencyKey: 'k', cmd: { kind: 'closeSession', sessionId: 's' } },
  { atMs: 1, cmd: { kind: 'acquire', name: 'a/b:c.d-e_F9', sessionId: 's', waitMs: 300000 } },
  { atMs: 1, cmd: { kind: 'acquire', name: 'x'.repeat(256), sessionId: 's', waitMs: 0, owner: '', newSession: { ttlMs: 1, owner: 'o', lockDelayMs: 5 } } },
  { atMs: 1, cmd: { kind: 'release', name: 'a', sessionId: 's' } },
  { atMs: 1, cmd: { kind: 'release', name: 'a', sessionId: 's', fencingToken: 9 } },
  { atMs: 1, cmd: { kind: 'cancelWait', name: 'a', sessionId: 's' } },
  { atMs: 1, cmd: { kind: 'expireSession', sessionId: 's' } },
  { atMs: 1, cmd: { kind: 'endLockDelay', name: 'a' } },
  { atMs: 0, cmd: { kind: 'barrier', term: 3 } },
];

test('valid envelopes round-trip through msgpack and parse to an equal, canonical value', () => {
  for (const env of good) {
    const parsed = parseEnvelope(decode(encode(env)));
    assert.deepEqual(parsed, env);
    assert.deepEqual(Buffer.from(encode(parseEnvelope(env))), Buffer.from(encode(env)));
  }
  // an absent optional field may arrive as undefined
  assert.deepEqual(parseEnvelope({ atMs: 1, idempotencyKey: undefined, cmd: { kind: 'release', name: 'a', sessionId: 's', fencingToken: undefined } }), { atMs: 1, cmd: { kind: 'release', name: 'a', sessionId: 's' } });
});

const bad: [unknown, RegExp][] = [
  [null, /envelope must be an object/],
  [[1], /envelope must be an object/],
  [{ atMs: -1, cmd: { kind: 'barrier', term: 0 } }, /envelope\.atMs/],
  [{ atMs: 1.5, cmd: { kind: 'barrier', term: 0 } }, /envelope\.atMs/],
  [{ atMs: 1, cmd: { kind: 'barrier', term: 0 }, extra: 1 }, /envelope\.extra is not a known field/],
  [{ atMs: 1, idempotencyKey: '', cmd: { kind: 'barrier', term: 0 } }, /idempotencyKey/],
  [{ atMs: 1, idempotencyKey: 'é'.repeat(65), cmd: { kind: 'barrier', term: 0 } }, /idempotencyKey/],
  [{ atMs: 1, idempotencyKey: null, cmd: { kind: 'barrier', term: 0 } }, /idempotencyKey/],
  [{ atMs: 1, cmd: { kind: 'explode' } }, /cmd\.kind must be one of/],
  [{ atMs: 1, cmd: 'acquire' }, /cmd must be an object/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: '', sessionId: 's', waitMs: 0 } }, /cmd\.name/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'x'.repeat(257), sessionId: 's', waitMs: 0 } }, /cmd\.name/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a b', sessionId: 's', waitMs: 0 } }, /cmd\.name/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a\u0000', sessionId: 's', waitMs: 0 } }, /cmd\.name/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a', sessionId: 's/../x', waitMs: 0 } }, /cmd\.sessionId/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a', sessionId: 's', waitMs: 300001 } }, /cmd\.waitMs/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a', sessionId: 's', waitMs: '5' } }, /cmd\.waitMs/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a', sessionId: 's', waitMs: 0, owner: 'x'.repeat(257) } }, /cmd\.owner/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a', sessionId: 's', waitMs: 0, owner: '\ud800' } }, /cmd\.owner/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a', sessionId: 's', waitMs: 0, newSession: { ttlMs: 0, owner: '', lockDelayMs: 0 } } }, /cmd\.newSession\.ttlMs/],
  [{ atMs: 1, cmd: { kind: 'acquire', name: 'a', sessionId: 's', waitMs: 0, newSession: { ttlMs: 1, owner: '', lockDelayMs: 0, x: 1 } } }, /cmd\.newSession\.x/],
  [{ atMs: 1, cmd: { kind: 'openSession', sessionId: 's', ttlMs: 1000, owner: '', lockDelayMs: -1 } }, /cmd\.lockDelayMs/],
  [{ atMs: 1, cmd: { kind: 'openSession', sessionId: 's', ttlMs: 2 ** 31, owner: '', lockDelayMs: 0 } }, /cmd\.ttlMs/],
  [{ atMs: 1, cmd: { kind: 'openSession', sessionId: 's', ttlMs: 1000, lockDelayMs: 0 } }, /cmd\.owner/],
  [{ atMs: 1, cmd: { kind: 'release', name: 'a', sessionId: 's', fencingToken: 0 } }, /cmd\.fencingToken/],
  [{ atMs: 1, cmd: { kind: 'release', name: 'a', sessionId: 's', fencingToken: 2 ** 53 } }, /cmd\.fencingToken/],
  [{ atMs: 1, cmd: { kind: 'closeSession', sessionId: 's', name: 'a' } }, /cmd\.name is not a known field/],
  [{ atMs: 1, cmd: { kind: 'barrier', term: NaN } }, /cmd\.term/],
  [{ atMs: 1, cmd: Object.create({ kind: 'barrier', term: 1 }) }, /cmd must be an object/],
];

test('malformed envelopes get an InvalidCommandError naming the field', () => {
  for (const [x, re] of bad) {
    assert.throws(() => parseEnvelope(x), (e: unknown) => e instanceof InvalidCommandError && re.test(e.message), `${JSON.stringify(x)} should fail with ${re}`);
  }
});

test('utf8Length counts bytes and flags lone surrogates', () => {
  assert.equal(utf8Length('a'), 1);
  assert.equal(utf8Length('é'), 2);
  assert.equal(utf8Length('€'), 3);
  assert.equal(utf8Length('🔒'), 4);
  assert.equal(utf8Length('\udc00x'), -1);
  assert.equal(utf8Length('x\ud800'), -1);
});

test('shared acquire and semaphore commands: parsed canonically, bad fields named', () => {
  assert.deepEqual(parseCommand({ kind: 'acquire', name: 'a', sessionId: 's', waitMs: 0, mode: 'shared' }), { kind: 'acquire', name: 'a', sessionId: 's', waitMs: 0, mode: 'shared' });
  assert.throws(() => parseCommand({ kind: 'acquire', name: 'a', sessionId: 's', waitMs: 0, mode: 'read' }), /cmd\.mode must be "shared"/);
  assert.deepEqual(parseCommand({ permits: 2, kind: 'semAcquire', name: 'S', sessionId: 's', limit: 4, waitMs: 10 }), { kind: 'semAcquire', name: 'S', sessionId: 's', limit: 4, permits: 2, waitMs: 10 });
  assert.throws(() => parseCommand({ kind: 'semAcquire', name: 'S', sessionId: 's', limit: 10001, permits: 1, waitMs: 0 }), /cmd\.limit must be an integer in \[1, 10000\]/);
  assert.throws(() => parseCommand({ kind: 'semSetLimit', name: 'S', limit: 0 }), /cmd\.limit/);
  assert.throws(() => parseCommand({ kind: 'semCancelWait', name: 'S', sessionId: 's' }), /cmd\.since/);
  assert.deepEqual(parseCommand({ kind: 'semRelease', name: 'S', sessionId: 's' }), { kind: 'semRelease', name: 'S', sessionId: 's' });
});
