// Pure majority-quorum arithmetic (etcd-io/raft quorum/majority.go in spirit). No joint
// consensus: raftlock changes membership one server at a time (thesis ch. 4), so a single
// majority config is all the core ever needs.
import type { Index, NodeId } from './types.js';

export type VoteResult = 'won' | 'lost' | 'pending';

/** smallest number of voters that forms a majority */
export function quorumSize(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/**
 * The largest index acknowledged by a majority of `voters`. `acked(id)` is the index voter
 * `id` has durably matched (undefined counts as 0). With no voters nothing can commit, so
 * the answer is 0 (etcd returns +inf there because it composes joint configs; we do not).
 */
export function committedIndex(voters: readonly NodeId[], acked: (id: NodeId) => Index | undefined): Index {
  const n = voters.length;
  if (n === 0) return 0;
  const idx = voters.map((v) => acked(v) ?? 0).sort((a, b) => b - a);
  // sorted descending, the q-th highest index is held by at least q voters
  return idx[quorumSize(n) - 1]!;
}

/**
 * Outcome of an election given the answers so far: 'won' once a majority granted,
 * 'lost' once a majority can no longer be reached, else 'pending'. Answers from nodes
 * outside `voters` are ignored — among them the candidate's own, when its pending
 * removal already took it out of `voters` (docs/raft-core.md "Removed, but not yet
 * committed"). An empty voter set never wins (no conf change may leave one).
 */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  const n = voters.length;
  if (n === 0) return 'lost';
  let granted = 0;
  let rejected = 0;
  for (const v of voters) {
    const answer = votes.get(v);
    if (answer === true) granted++;
    else if (answer === false) rejected++;
  }
  const q = quorumSize(n);
  if (granted >= q) return 'won';
  if (n - rejected < q) return 'lost';
  return 'pending';
}

/** whether the nodes in `set` include a majority of `voters` */
export function hasQuorum(voters: readonly NodeId[], set: ReadonlySet<NodeId>): boolean {
  let k = 0;
  for (const v of voters) if (set.has(v)) k++;
  return voters.length > 0 && k >= quorumSize(voters.length);
}
