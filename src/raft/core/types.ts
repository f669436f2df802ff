// The vocabulary of the Raft core. Everything here is plain data: it crosses the
// core/driver boundary, goes to disk (LevelStorage) and over the wire (transport codec),
// so it must stay structurally cloneable (no classes, no functions, no Maps).

export type NodeId = string;
export type Term = number;
export type Index = number;

/** Persistent state on all servers (Raft §5.2, Figure 2). Written atomically, before any
 *  message that relies on it leaves the node. */
export interface HardState {
  term: Term;
  /** candidate that received our vote in `term`, or null */
  vote: NodeId | null;
  /** highest index known committed; persisted so a restart re-applies no further than it
   *  may, and need not wait for a leader to learn it */
  commit: Index;
}

export type EntryKind = 'normal' | 'noop' | 'conf';

export interface Entry {
  index: Index;
  term: Term;
  /** 'noop' is the empty entry a leader appends at the start of its term (§5.4.2, §8);
   *  'conf' carries an encoded ConfChange (see conf.ts); 'normal' carries application bytes */
  kind: EntryKind;
  data: Uint8Array;
}

/** Membership in force. Single-server changes (thesis ch. 4): a configuration takes
 *  effect on each server as soon as its entry is appended to that server's log. */
export interface ConfState {
  voters: NodeId[];
  learners: NodeId[];
  /** which data directory (incarnation) each voter is, once bound (docs/membership.md,
   *  "Incarnations"): a voter counts for votes and commits only through this incarnation.
   *  Absent in a configuration that never saw a 'bootstrap' entry (a fresh node's seed
   *  conf, or a log written before incarnations existed). */
  incarnations?: Record<NodeId, string>;
  /** created by the first leader of a brand-new cluster, in its 'bootstrap' entry */
  clusterId?: string;
}

export type ConfChangeType = 'addVoter' | 'addLearner' | 'removeNode' | 'bootstrap';
export interface ConfChange {
  /** 'bootstrap': appended by the first leader of a cluster (or of a cluster whose log
   *  predates incarnations); binds `incarnations` and sets `clusterId`; nodeId is that leader */
  type: ConfChangeType;
  nodeId: NodeId;
  /** opaque to the core: the application keeps addresses (api/peer URLs) here */
  context?: Uint8Array;
  /** addVoter: the incarnation it binds nodeId to (the leader fills it in) */
  incarnation?: string;
  /** bootstrap only */
  incarnations?: Record<NodeId, string>;
  clusterId?: string;
}

export interface SnapshotMeta {
  /** last index the snapshot covers, and its term */
  index: Index;
  term: Term;
  /** membership as of `index` */
  conf: ConfState;
}

export interface Snapshot {
  meta: SnapshotMeta;
  /** application (lock FSM) state as of meta.index; opaque to the core */
  data: Uint8Array;
}

export type Role = 'follower' | 'preCandidate' | 'candidate' | 'leader';

/** inc: the sender's incarnation (its data directory's id, RaftConfig.incarnation); absent
 *  from nodes that run without one (tests, the simulator with the guard off) */
type Header = { from: NodeId; to: NodeId; term: Term; inc?: string };

export type Message = Header &
  (
    /** transfer: set on the votes of a leadership transfer (timeoutNow), so that voters
     *  grant it despite their leader lease (thesis §3.10, §4.2.3; etcd campaignTransfer) */
    /** bind: the incarnation the candidate's log binds the addressee to, so a voter that
     *  has not received that binding yet (a lagging member) can tell it is the one meant */
    | { type: 'vote' | 'preVote'; lastIndex: Index; lastTerm: Term; transfer?: boolean; bind?: string }
    | { type: 'voteResp' | 'preVoteResp'; reject: boolean }
    | { type: 'append'; prevIndex: Index; prevTerm: Term; entries: Entry[]; commit: Index }
    /** index: on success the last index now matching the leader; on reject, the rejected
     *  prevIndex. hint/hintTerm: fast back-tracking (§5.3 "optimization"): the follower's
     *  best guess of the last index that might match and its term there. lost: a rejection
     *  of a heartbeat's commit index (`index`), which the follower had acknowledged but its
     *  log no longer reaches: its disk lost entries (docs/raft-core.md "A follower whose
     *  log went backwards") */
    | { type: 'appendResp'; index: Index; reject: boolean; hint: Index; hintTerm: Term; lost?: boolean }
    /** ctx: ReadIndex round id (0 = plain heartbeat). match: present (at or above commit)
     *  only while the leader doubts the follower still holds what it acknowledged
     *  (Progress.matchInDoubt): that index, which a follower whose log no longer reaches it
     *  answers with a `lost` rejection (docs/raft-core.md "A follower whose log went
     *  backwards") */
    | { type: 'heartbeat'; commit: Index; ctx: number; match?: Index }
    | { type: 'heartbeatResp'; ctx: number }
    | { type: 'snapshot'; snapshot: Snapshot }
    /** leadership transfer (thesis §3.10): campaign at once, bypassing pre-vote */
    | { type: 'timeoutNow' }
  );

export type MessageType = Message['type'];

export interface SoftState {
  leader: NodeId | null;
  role: Role;
}

/** A completed ReadIndex request: once the local applied index reaches `index`, a read
 *  issued with `ctx` may be served linearizably (§6.4). */
export interface ReadState {
  index: Index;
  ctx: number;
}

/**
 * Ready: everything the core wants done, handed out by RawNode.ready() and acknowledged
 * by RawNode.advance(rd). The driver MUST handle it in this order:
 *
 *  1. Send `earlyMessages` at any time (the core guarantees they depend on nothing in this
 *     Ready: they are a leader's appends/heartbeats in a term that is already durable).
 *     The leader counts its own log toward commit only after step 2 (thesis §10.2.1).
 *  2. Persist, as ONE atomic write: `hardState` (if set), `snapshot` (if set; it replaces
 *     the log up to its index), then `entries` (which first truncate every stored entry
 *     with index >= entries[0].index). Fsync before continuing when `mustSync` is true.
 *  3. Only then send `messages` (votes, append responses, … rely on step 2 being durable).
 *  4. If `snapshot` is set, restore the application from snapshot.data.
 *     Apply `committed` in order (all have index > the previous applied index).
 *     Serve `readStates` once applied >= their index.
 *  5. Call advance(rd). Never call ready() twice without advance() in between.
 */
export interface Ready {
  readonly soft?: SoftState;
  readonly hardState?: HardState;
  readonly snapshot?: Snapshot;
  readonly entries: readonly Entry[];
  readonly committed: readonly Entry[];
  readonly readStates: readonly ReadState[];
  readonly earlyMessages: readonly Message[];
  readonly messages: readonly Message[];
  readonly mustSync: boolean;
}

export type ProposeResult =
  | { ok: true; index: Index; term: Term }
  /** term_not_committed: a conf change to a leader whose term has no committed entry yet
   *  (its noop commits within a round trip; retry then). conf_change_pending: an earlier
   *  conf entry is not committed yet. incarnation_conflict: an addVoter that would rebind a
   *  voter to another incarnation (remove it first). */
  | { ok: false; reason: 'not_leader' | 'transferring' | 'term_not_committed' | 'conf_change_pending' | 'too_large' | 'unknown_node' | 'invalid_conf_change' | 'incarnation_conflict' };

/**
 * - fresh: empty log, no 'bootstrap' entry seen: a node of a cluster not bootstrapped yet
 *   (or one that lost its disk and has not heard from its cluster yet)
 * - bound: the configuration binds this node's id to this incarnation: a full member
 * - unbound: not bound (a learner, a joiner, a removed node), or a log that predates
 *   incarnations ('legacy')
 * - superseded: the configuration binds this id to ANOTHER incarnation: this node is a
 *   member that lost its data; it must never vote and must be removed and re-joined
 */
export type Standing = 'fresh' | 'bound' | 'unbound' | 'legacy' | 'superseded';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export interface ProgressStatus {
  match: Index;
  next: Index;
  state: ProgressState;
  learner: boolean;
  recentActive: boolean;
  /** present while the follower's log is behind what it had acknowledged (its disk lost
   *  entries): the index it must hold again before it counts for reads */
  recoverTo?: Index;
}

export interface Status {
  id: NodeId;
  role: Role;
  term: Term;
  vote: NodeId | null;
  leader: NodeId | null;
  commit: Index;
  applied: Index;
  lastIndex: Index;
  /** the highest commit index this node knows of: its own, or one a leader's append told
   *  it that its log does not reach yet (Raft.knownCommit) */
  knownCommit: Index;
  /** the commit index carried by the latest append of the current leader; 0 until one
   *  arrives (Raft.leaderCommit) */
  leaderCommit: Index;
  conf: ConfState;
  /** present on the leader only */
  progress?: Record<NodeId, ProgressStatus>;
  /** this node's standing as an incarnation (docs/membership.md, "Incarnations"); absent
   *  when the node runs without one */
  standing?: Standing;
  leadTransferee: NodeId | null;
}

/** Events the core reports through RaftConfig.trace, for checkers in the simulator. */
export type TraceEvent =
  | { type: 'becomeLeader'; id: NodeId; term: Term }
  | { type: 'becomeFollower'; id: NodeId; term: Term; leader: NodeId | null }
  | { type: 'becomeCandidate'; id: NodeId; term: Term; preVote: boolean }
  | { type: 'commit'; id: NodeId; index: Index; term: Term }
  | { type: 'voteGranted'; id: NodeId; term: Term; to: NodeId };
