// Incarnations: which data directory a member is (docs/membership.md, "Incarnations").
//
// Raft assumes a server never forgets what it persisted (§5.2: term, vote, log). A node
// whose disk is lost and that comes back under the same id breaks that: it can grant a
// vote with an empty log, or acknowledge entries that a majority it once belonged to had
// already moved past, and a committed entry is lost. So every data directory gets a
// random incarnation at creation (RaftConfig.incarnation), every message carries it, and
// the replicated configuration binds each voter to ONE incarnation:
//  - a brand-new cluster binds all its voters in the 'bootstrap' entry its first leader
//    appends; that first election needs EVERY voter's grant, each from a node whose log
//    is empty (so no majority of blank disks can ever bootstrap over an existing cluster);
//  - a promotion (addVoter) binds the incarnation the leader has been replicating to;
//  - only a bound incarnation's votes, commit acks and ReadIndex/quorum acks count, and a
//    node that is not bound grants no vote (unless the candidate's log binds it) and
//    never campaigns (its standing is judged under the configuration that makes it a
//    voter: normally its latest, the committed one while its removal is pending —
//    docs/raft-core.md "Removed, but not yet committed"; a learner, never bound, may
//    campaign while it holds uncommitted entries: "Learners with uncommitted entries").
// A member whose id is bound to another incarnation is 'superseded': it lost its data,
// and only `member remove` then a fresh join (a new binding) brings it back.
// Pure functions only; the Raft class calls them.
import type { ConfState, Index, NodeId, Standing } from './types.js';

/** this node's standing under `conf` (see Standing in types.ts) */
export function standingOf(conf: ConfState, lastIndex: Index, id: NodeId, inc: string): Standing {
  const bound = conf.incarnations?.[id];
  if (bound !== undefined) return bound === inc ? 'bound' : 'superseded';
  if (conf.clusterId === undefined) return lastIndex === 0 ? 'fresh' : 'legacy';
  return 'unbound';
}

/** does a response from `id`, sent by incarnation `inc`, count under `conf`? A conf that
 *  never saw a bootstrap entry (legacy log) counts everyone, as Raft without incarnations */
export function countsUnder(conf: ConfState, id: NodeId, inc: string | undefined): boolean {
  if (conf.clusterId === undefined && conf.incarnations === undefined) return true;
  const bound = conf.incarnations?.[id];
  return bound !== undefined && bound === inc;
}

/** may this node grant a vote (or pre-vote) to a candidate with this log end and claim? */
export function mayGrant(standing: Standing, self: string, m: { lastIndex: Index; bind?: string | undefined }): boolean {
  // the candidate's log says which incarnation it asks: never vote as someone else
  if (m.bind !== undefined) return m.bind === self;
  if (standing === 'bound' || standing === 'legacy') return true;
  // a brand-new cluster's first election: blank disks vote for a blank candidate (it
  // needs every voter, see unanimous below)
  return standing === 'fresh' && m.lastIndex === 0;
}

/** the bootstrap election (a fresh candidate) needs every voter's grant */
export function unanimous(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): 'won' | 'lost' | 'pending' {
  let all = voters.length > 0;
  for (const v of voters) {
    const a = votes.get(v);
    if (a === false) return 'lost';
    if (a !== true) all = false;
  }
  return all ? 'won' : 'pending';
}
