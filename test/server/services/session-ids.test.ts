// Session ids (requester.ts newSessionId): 128 random bits as 32 hex characters, drawn from
// a pool that is refilled every 256 ids. Over several refills: every id well-formed, none
// repeated, none all zeros (what a taken slot is overwritten with), and every hex digit
// seen in every position (a pool slice read at the wrong offset would fix some digits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isSessionId } from '../../../src/lock-fsm/index.js';
import { newSessionId } from '../../../src/server/services/requester.js';

test('session ids: well-formed, unique and random in every position across pool refills', () => {
  const N = 256 * 8 + 17;
  const seen = new Set<string>();
  const digits = Array.from({ length: 32 }, () => new Set<string>());
  for (let i = 0; i < N; i++) {
    const id = newSessionId();
    assert.match(id, /^[0-9a-f]{32}$/, `id ${i}: ${id}`);
    assert.ok(isSessionId(id), `id ${i} is not a session id to the state machine: ${id}`);
    assert.notEqual(id, '0'.repeat(32), `id ${i} is all zeros: a slot was read after it was cleared`);
    assert.ok(!seen.has(id), `id ${i} repeats an earlier id: ${id}`);
    seen.add(id);
    for (let p = 0; p < 32; p++) digits[p]!.add(id[p]!);
  }
  for (let p = 0; p < 32; p++) assert.equal(digits[p]!.size, 16, `position ${p} took only ${[...digits[p]!].sort().join('')} over ${N} ids`);
});
