// ModelAgreement (model-checker.ts) on a real LockFsm's stream: agrees entry by entry, and
// fires on an answer or an event the reference model would not give (a grant that skips
// the queue, a token that does not rise, a replayed key answered differently).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockFsm, type ApplyOutput, type Command, type Envelope } from '../../../src/lock-fsm/index.js';
import { ModelAgreement } from './model-checker.js';

const stable = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))) : x));

const STREAM: Command[] = [
  { kind: 'openSession', sessionId: 'a', ttlMs: 1000, owner: 'A', lockDelayMs: 0 },
  { kind: 'openSession', sessionId: 'b', ttlMs: 1000, owner: 'B', lockDelayMs: 0 },
  { kind: 'acquire', name: 'l', sessionId: 'a', waitMs: 0 },
  { kind: 'acquire', name: 'l', sessionId: 'b', waitMs: 500 },
  { kind: 'semAcquire', name: 's', sessionId: 'b', limit: 2, permits: 2, waitMs: 0 },
  { kind: 'release', name: 'l', sessionId: 'a' },
  { kind: 'campaign', name: 'e', sessionId: 'a', value: 'v1', waitMs: 0 },
  { kind: 'proclaim', name: 'e', sessionId: 'a', value: 'v2' },
  { kind: 'semSetLimit', name: 's', limit: 3 },
  { kind: 'expireSession', sessionId: 'b' },
];

function envs(): Envelope[] {
  return STREAM.map((cmd, i) => ({ atMs: 1000 + i, cmd, ...(i === 2 ? { idempotencyKey: 'k1' } : {}) }));
}

test('ModelAgreement: a LockFsm stream agrees with the model at every entry', () => {
  const fsm = new LockFsm({});
  const m = new ModelAgreement(stable);
  envs().forEach((env, i) => assert.equal(m.onFirstApply(i + 1, env, fsm.apply(i + 1, env)), null, `entry ${i + 1}`));
  // a retry of the keyed acquire replays the first answer
  const retry: Envelope = { atMs: 2000, idempotencyKey: 'k1', cmd: STREAM[2]! };
  assert.equal(m.onFirstApply(20, retry, fsm.apply(20, retry)), null);
  assert.equal(m.checked, STREAM.length + 1);
});

test('ModelAgreement: fires on what the model would not do', () => {
  const cases: [string, (i: number, out: ApplyOutput) => ApplyOutput][] = [
    // the waiter is not handed the lock by the release
    ['no hand-over', (i, out) => (i === 6 ? { ...out, events: out.events.filter((e) => e.type !== 'granted') } : out)],
    // a grant's token below the index it was applied at
    ['token', (i, out) => (i === 3 && out.result.ok && out.result.kind === 'acquired' ? { ...out, result: { ...out.result, fencingToken: 1 } } : out)],
    // a proclaim answered for a value the leader did not send
    ['value', (i, out) => (i === 8 && out.result.ok && out.result.kind === 'proclaimed' ? { ...out, result: { ...out.result, value: 'v9' } } : out)],
  ];
  for (const [what, corrupt] of cases) {
    const fsm = new LockFsm({});
    const m = new ModelAgreement(stable);
    const why = envs().map((env, i) => m.onFirstApply(i + 1, env, corrupt(i + 1, fsm.apply(i + 1, env)))).find((x) => x !== null);
    assert.ok(why !== undefined && why !== null, `${what}: not caught`);
  }
});
