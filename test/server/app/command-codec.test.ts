// The log command codec (src/server/app/command-codec.ts). The leader applies the envelope it
// validated when it encoded its own command (docs/lock-fsm.md "The leader's own commands"),
// every other member decodes the bytes: the two must be the same value, or the leader's
// state machine would diverge from its followers'. So for random envelopes of every
// command kind: decoding the bytes (a copy, as a follower gets them) equals what the
// leader applies, and re-encoding it gives the same bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeCommand, decodeCommandBytes, encodeCommand } from '../../../src/server/app/command-codec.js';
import { InvalidCommandError, type Command, type Envelope } from '../../../src/lock-fsm/index.js';
import { LOCK_NAME_RE, PRINCIPAL_RE, SESSION_ID_RE } from '../../../src/lock-fsm/names.js';
import { testSeed } from '../../support/seed.js';

const runs = 2000;
const seed = testSeed('CODEC_SEED', { what: `command codec round trips, ${runs} runs`, replay: 'node --test dist/test/server/app/command-codec.test.js' });

const sid = fc.stringMatching(SESSION_ID_RE);
const name = fc.stringMatching(LOCK_NAME_RE);
const text = (maxLength: number) => fc.string({ unit: 'binary', maxLength });
// -0 as well: JSON.parse('-0') is -0, msgpack makes it 0
const int = (lo: number, hi: number) => fc.oneof(fc.integer({ min: lo, max: hi }), fc.constant(lo === 0 ? -0 : lo));
const dur = int(0, 2 ** 31 - 1);
const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const newSession = fc.record({ ttlMs: int(1, 2 ** 31 - 1), owner: text(64), lockDelayMs: dur, principal: opt(fc.stringMatching(PRINCIPAL_RE)) });
const kind = fc.constantFrom('lock' as const, 'semaphore' as const);
const holder = { owner: opt(text(64)), newSession: opt(newSession), actor: opt(fc.stringMatching(PRINCIPAL_RE)), maxHoldMs: opt(int(1, 2 ** 31 - 1)) };

const command: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({ kind: fc.constant('openSession'), sessionId: sid, ttlMs: int(1, 2 ** 31 - 1), owner: text(64), lockDelayMs: dur, principal: opt(fc.stringMatching(PRINCIPAL_RE)) }),
  fc.record({ kind: fc.constant('closeSession'), sessionId: sid, actor: opt(fc.stringMatching(PRINCIPAL_RE)) }),
  fc.record({ kind: fc.constant('acquire'), name, sessionId: sid, waitMs: int(0, 300_000), mode: opt(fc.constant('shared')), ...holder }),
  fc.record({ kind: fc.constant('semAcquire'), name, sessionId: sid, limit: int(1, 10_000), permits: int(1, 10_000), waitMs: int(0, 300_000), ...holder }),
  fc.record({ kind: fc.constant('campaign'), name, sessionId: sid, value: text(200), waitMs: int(0, 300_000), ...holder }),
  fc.record({ kind: fc.constant('revoke'), target: kind, name, sessionId: opt(sid) }),
  fc.record({ kind: fc.constant('expireHold'), target: kind, name, sessionId: sid, fencingToken: int(1, Number.MAX_SAFE_INTEGER) }),
  fc.record({ kind: fc.constant('release'), name, sessionId: sid, fencingToken: opt(int(1, Number.MAX_SAFE_INTEGER)), actor: opt(fc.stringMatching(PRINCIPAL_RE)), settles: opt(fc.string({ minLength: 1, maxLength: 32 })) }),
  fc.record({ kind: fc.constant('semRelease'), name, sessionId: sid, actor: opt(fc.stringMatching(PRINCIPAL_RE)), settles: opt(fc.string({ minLength: 1, maxLength: 32 })) }),
  fc.record({ kind: fc.constant('proclaim'), name, sessionId: sid, value: text(200), actor: opt(fc.stringMatching(PRINCIPAL_RE)) }),
  fc.record({ kind: fc.constant('resign'), name, sessionId: sid, actor: opt(fc.stringMatching(PRINCIPAL_RE)) }),
  fc.record({ kind: fc.constant('semSetLimit'), name, limit: int(1, 10_000) }),
  fc.record({ kind: fc.constant('semCancelWait'), name, sessionId: sid, since: int(1, Number.MAX_SAFE_INTEGER) }),
  fc.record({ kind: fc.constant('cancelWait'), name, sessionId: sid, since: opt(int(1, Number.MAX_SAFE_INTEGER)) }),
  fc.record({ kind: fc.constant('expireSession'), sessionId: sid }),
  fc.record({ kind: fc.constant('endLockDelay'), name, since: opt(int(1, Number.MAX_SAFE_INTEGER)) }),
  fc.record({ kind: fc.constant('barrier'), term: int(0, Number.MAX_SAFE_INTEGER) }),
);

/** an object without its undefined fields, as a caller builds it (`...(x ? { x } : {})`) */
function compact(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = typeof v === 'object' && v !== null ? compact(v as Record<string, unknown>) : v;
  return out;
}

const envelope = fc.record({ atMs: int(0, Number.MAX_SAFE_INTEGER), idempotencyKey: opt(fc.string({ minLength: 1, maxLength: 64 })), cmd: command }).map(compact);

test('the leader applies exactly what its followers decode: for every command kind, the bytes decode to the envelope it validated', () => {
  let checked = 0;
  fc.assert(
    fc.property(envelope, (raw) => {
      let bytes: Uint8Array;
      try {
        bytes = encodeCommand(raw as unknown as Envelope);
      } catch (err) {
        // a combination the validator refuses (a shared semaphore, say): refused before
        // it could be proposed, as submitOutput does
        if (err instanceof InvalidCommandError) return;
        throw err;
      }
      checked++;
      const own = decodeCommand(bytes);
      assert.equal(decodeCommand(bytes), own, 'the same bytes object gives the envelope encodeCommand validated');
      const follower = decodeCommandBytes(new Uint8Array(bytes));
      assert.deepStrictEqual(follower, own);
      // -0 became 0 in both (deepStrictEqual tells them apart)
      assert.deepStrictEqual(Buffer.from(encodeCommand(follower)), Buffer.from(bytes));
    }),
    { seed, numRuns: runs },
  );
  assert.ok(checked > runs / 2, `only ${checked} of ${runs} envelopes were valid: the generator no longer fits the validator`);
});

test('encodeCommand refuses an envelope apply() would refuse, naming the field', () => {
  const cmd = { kind: 'acquire', name: 'bad name', sessionId: 's', waitMs: 0 } as unknown as Command;
  assert.throws(() => encodeCommand({ atMs: 1, cmd }), (e) => e instanceof InvalidCommandError && /cmd\.name/.test(e.message));
});

test('a copy of the bytes, or bytes from disk, is decoded and validated: only the object encodeCommand made is taken on trust', () => {
  const bytes = encodeCommand({ atMs: 5, cmd: { kind: 'expireSession', sessionId: 'abc' } });
  const copy = new Uint8Array(bytes);
  assert.notEqual(decodeCommand(copy), decodeCommand(bytes));
  assert.deepStrictEqual(decodeCommand(copy), decodeCommand(bytes));
  copy[copy.length - 1] = 0x21; // the session id's last character becomes '!'
  assert.throws(() => decodeCommand(copy), /sessionId/);
});
