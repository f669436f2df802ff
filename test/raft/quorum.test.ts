// Table tests for the pure quorum arithmetic (after etcd-io/raft quorum/testdata/majority_commit.txt).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { committedIndex, hasQuorum, quorumSize, voteResult } from '../../src/raft/core/quorum.js';

test('quorumSize is a strict majority', () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(quorumSize), [1, 2, 2, 3, 3, 4, 4]);
});

test('committedIndex: the highest index a majority acknowledged', () => {
  // [voters, acked index per voter (undefined = never acked), expected]
  const cases: [string[], (number | undefined)[], number][] = [
    [[], [], 0], // no voters: nothing can commit
    [['a'], [5], 5],
    [['a'], [undefined], 0],
    [['a', 'b'], [5, 3], 3], // both needed
    [['a', 'b', 'c'], [5, 3, 1], 3],
    [['a', 'b', 'c'], [5, 5, 1], 5],
    [['a', 'b', 'c'], [5, undefined, undefined], 0],
    [['a', 'b', 'c', 'd'], [9, 8, 7, 6], 8 - 1], // needs 3 of 4 → third highest = 7
    [['a', 'b', 'c', 'd', 'e'], [1, 2, 3, 4, 5], 3],
    [['a', 'b', 'c', 'd', 'e'], [10, 10, 0, 0, 10], 10],
    [['a', 'b', 'c', 'd', 'e'], [10, 10, 0, 0, 9], 9],
  ];
  for (const [voters, acks, want] of cases) {
    const m = new Map(voters.map((v, k) => [v, acks[k]]));
    assert.equal(committedIndex(voters, (id) => m.get(id)), want, `voters=${voters} acks=${acks}`);
  }
});

test('committedIndex ignores acks from non-voters (learners)', () => {
  const acks = new Map([['a', 4], ['b', 1], ['c', 1], ['learner', 100]]);
  assert.equal(committedIndex(['a', 'b', 'c'], (id) => acks.get(id)), 1);
});

test('voteResult: won, lost or pending', () => {
  const cases: [string[], [string, boolean][], string][] = [
    [[], [], 'lost'],
    [['a'], [['a', true]], 'won'],
    [['a'], [], 'pending'],
    [['a', 'b', 'c'], [['a', true]], 'pending'],
    [['a', 'b', 'c'], [['a', true], ['b', true]], 'won'],
    [['a', 'b', 'c'], [['a', true], ['b', false]], 'pending'],
    [['a', 'b', 'c'], [['a', true], ['b', false], ['c', false]], 'lost'],
    [['a', 'b', 'c', 'd'], [['a', true], ['b', true]], 'pending'], // 2 of 4 is not a majority
    [['a', 'b', 'c', 'd'], [['a', true], ['b', false], ['c', false]], 'lost'],
    [['a', 'b', 'c'], [['a', true], ['x', true], ['y', true]], 'pending'], // strangers don't count
  ];
  for (const [voters, votes, want] of cases) {
    assert.equal(voteResult(voters, new Map(votes)), want, `voters=${voters} votes=${JSON.stringify(votes)}`);
  }
});

test('hasQuorum counts only voters', () => {
  assert.equal(hasQuorum(['a', 'b', 'c'], new Set(['a', 'b'])), true);
  assert.equal(hasQuorum(['a', 'b', 'c'], new Set(['a', 'x', 'y'])), false);
  assert.equal(hasQuorum([], new Set(['a'])), false);
});
