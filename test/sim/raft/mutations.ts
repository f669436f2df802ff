// Mutations: a safety (or liveness) fix switched off for one run, to show that the
// simulator still finds the bug it prevents (docs/simulation.md "Mutation table"). Each name maps to the
// test-only core option that reverts the fix; nothing outside tests sets those options.
import type { RaftConfig } from '../../../src/raft/core/raft.js';

export const MUTATIONS = {
  /** a new leader accepts a conf change before an entry of its own term has committed */
  'conf-change-before-term-commit': { unsafeAllowConfChangeBeforeTermCommit: true },
  /** a voter whose disk was lost comes back under its id and votes with the state it forgot
   *  (incarnations ignored: docs/membership.md "Incarnations") */
  'amnesia-guard-off': { testOnlyDisableAmnesiaGuard: true },
  /** a voter whose removal (or demotion) is appended but not committed never campaigns, so
   *  a leader that appended its own removal and then lost its quorum can strand the
   *  cluster without a leader (a liveness bug: docs/raft-core.md "Membership") */
  'removed-never-campaigns': { testOnlyNoCampaignWhileRemovalPending: true },
  /** a node with a blank disk campaigns with real votes when Pre-Vote is off, so a member
   *  whose disk was lost deposes each leader of a cluster running neither Pre-Vote nor
   *  Check-Quorum, and its removal never commits (a liveness bug: docs/raft-core.md "Incarnations") */
  'fresh-campaigns-without-prevote': { testOnlyFreshCampaignsWithoutPreVote: true },
  /** a fresh node told to take over (a timeoutNow meant for the incarnation it replaced)
   *  campaigns at once and counts the grants that incarnation's request earned: it leads
   *  with an empty log (a safety bug: docs/raft-core.md "Incarnations") */
  'fresh-transfer-without-prevote': { testOnlyFreshTransferSkipsPreVote: true },
  /** a learner never campaigns, even holding the newest log, which no voter can then beat
   *  (a liveness bug: docs/raft-core.md "Learners with uncommitted entries") */
  'learner-never-campaigns': { testOnlyNoLearnerCampaign: true },
  /** the vote lease holds without Pre-Vote too, so the real votes that losing candidates
   *  collect start leases that refuse the candidate whose log could win, term after term
   *  (a liveness bug: docs/recovery.md "A vote is a lease too") */
  'vote-lease-without-prevote': { testOnlyVoteLeaseWithoutPreVote: true },
  /** a vote request of a stale term gets no answer (as in etcd-raft), so without Pre-Vote
   *  a candidate that no other candidate sends to never learns the term it is behind (a
   *  liveness bug: docs/raft-core.md "Stale vote requests") */
  'stale-vote-unanswered': { testOnlyIgnoreStaleVote: true },
  /** the leader lease holds only with Check-Quorum (as in etcd-raft), so without it a voter
   *  whose removal it has not seen commit, and that the leader no longer sends to, deposes
   *  each leader before the removal commits (a liveness bug: docs/raft-core.md "The leader lease") */
  'lease-only-with-checkquorum': { testOnlyLeaseOnlyWithCheckQuorum: true },
  /** a follower whose disk lost entries it had acknowledged is not noticed: the leader keeps
   *  its old match, counts it for reads, and keeps sending from there, so the follower stays
   *  stuck behind until the leader compacts (docs/raft-core.md "A follower whose log went backwards") */
  'log-regression-ignored': { testOnlyIgnoreLogRegression: true },
  /** a follower whose disk lost its whole log, the entry that bound its data directory
   *  included, looks fresh and never says `lost`: the leader probes it at its old match
   *  for ever (docs/raft-core.md "A follower whose log went backwards") */
  'fresh-never-says-lost': { testOnlyFreshNeverSaysLost: true },
  /** a leader counts its own log toward commit when it appends, not once it is durable:
   *  with acknowledgements stepped during its write (src/raft/driver.ts receive), an entry
   *  commits, applies and is answered on the leader's unwritten copy and ONE follower's, and
   *  a power loss of the leader loses it (a safety bug: docs/raft-core.md "Commit during the
   *  leader's write") */
  'count-unsynced-self': { testOnlyCountUnsyncedSelf: true },
} as const satisfies Record<string, Partial<RaftConfig>>;

export type Mutation = keyof typeof MUTATIONS;

/** a comma-separated list of mutation names (SIM_MUTATIONS=…, --mutation …); throws naming an unknown one */
export function parseMutations(list: string | undefined): Mutation[] {
  if (list === undefined || list.trim() === '') return [];
  return list.split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
    if (!Object.hasOwn(MUTATIONS, s)) throw new Error(`unknown mutation ${JSON.stringify(s)} (known: ${Object.keys(MUTATIONS).join(', ')})`);
    return s as Mutation;
  });
}

/** the core options that switch these fixes off */
export function mutatedRaftConfig(ms: readonly Mutation[]): Partial<RaftConfig> {
  return Object.assign({}, ...ms.map((m) => MUTATIONS[m])) as Partial<RaftConfig>;
}
