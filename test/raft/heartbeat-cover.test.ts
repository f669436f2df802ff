// The heartbeat cover on its own (src/raft/heartbeat-cover.ts): heartbeats only while a
// leader waits for its disk, only in the term it replicated in, only to members, at most
// maxTicks of them per wait.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HeartbeatCover } from '../../src/raft/heartbeat-cover.js';
import type { Message } from '../../src/raft/core/types.js';

const append = (to: string, term: number): Message => ({ type: 'append', from: 'n1', to, term, prevIndex: 0, prevTerm: 0, entries: [], commit: 0 });
const all = (): ReadonlySet<string> => new Set(['n1', 'n2', 'n3']);

test('a waiting leader heartbeats the followers it replicated to in its term, for at most maxTicks ticks of each wait', () => {
  const c = new HeartbeatCover(3);
  c.noteSent('leader', [append('n2', 5), append('n3', 5), { type: 'voteResp', from: 'n1', to: 'n4', term: 5, reject: false }]);
  assert.deepEqual(c.onTick('n1', 'leader', 5, all), [], 'not while the loop is not waiting');
  c.beginWait();
  const hb = c.onTick('n1', 'leader', 5, all);
  assert.deepEqual(hb, [
    { type: 'heartbeat', from: 'n1', to: 'n2', term: 5, commit: 0, ctx: 0 },
    { type: 'heartbeat', from: 'n1', to: 'n3', term: 5, commit: 0, ctx: 0 },
  ]);
  assert.equal(c.onTick('n1', 'leader', 5, () => new Set(['n1', 'n3'])).length, 1, 'a removed member hears nothing');
  assert.equal(c.onTick('n1', 'leader', 5, all).length, 2);
  assert.deepEqual(c.onTick('n1', 'leader', 5, all), [], 'the bound: past it, followers may time out');
  c.endWait();
  c.beginWait();
  assert.equal(c.onTick('n1', 'leader', 5, all).length, 2, 'each wait has its own bound');
  assert.deepEqual(c.onTick('n1', 'leader', 6, all), [], 'never for a term it did not replicate in');
  assert.deepEqual(c.onTick('n1', 'follower', 5, all), [], 'never as a follower');
  c.noteRole('follower');
  assert.deepEqual(c.onTick('n1', 'leader', 5, all), [], 'a node that stopped leading forgets its followers');
  assert.deepEqual(new HeartbeatCover(0).onTick('n1', 'leader', 5, all), [], '0: off');
});
