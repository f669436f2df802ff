// Safety checkers. The simulator sees every node's state, so the Raft paper's properties
// (Figure 3) are checked directly, after every tick or at the moment the relevant event
// happens. A broken property throws SafetyViolation naming the checker, which the runner
// reports with the seed. Everything is incremental: no checker rescans whole logs per tick.
import type { Entry, Index, Message, NodeId, Term, TraceEvent } from '../../../src/raft/core/types.js';
import { chainDigest } from './chain-digest.js';

export type CheckerName =
  | 'ElectionSafety'
  | 'LogMatching'
  | 'LeaderAppendOnly'
  | 'LeaderCompleteness'
  | 'StateMachineSafety'
  | 'ReadLinearizability'
  | 'DurableBeforeSend'
  | 'VoteOncePerTerm'
  | 'DurableTermMonotonic';

export class SafetyViolation extends Error {
  constructor(readonly checker: CheckerName, detail: string) {
    super(`${checker} violated: ${detail}`);
    this.name = 'SafetyViolation';
  }
}

function violated(checker: CheckerName, detail: string): never {
  throw new SafetyViolation(checker, detail);
}

/** the read-only log view a checker needs (a simulated disk's written or durable state: MemoryDurableStorage) */
export interface LogView {
  term(i: Index): Term | undefined;
  firstIndex(): Index;
  lastIndex(): Index;
}

export interface DurableView extends LogView {
  hardState(): { term: Term; vote: NodeId | null; commit: Index };
}

/** one node as the checkers see it at the end of a tick */
export interface NodeSnapshot {
  id: NodeId;
  /** changes at every restart: state tied to one life is not carried over */
  incarnation: number;
  /** the data directory (a wiped node gets a new one) */
  disk?: string;
  role: string;
  term: Term;
  log: LogView;
  durable: DurableView;
}

const TERM_LIMIT = 1 << 24;
const entryKey = (index: Index, term: Term): number => {
  if (term >= TERM_LIMIT) violated('LogMatching', `term ${term} too large for the checker's key`);
  return index * TERM_LIMIT + term;
};

interface LeaderWatch {
  incarnation: number;
  term: Term;
  /** every entry first applied before this leader was elected: it must hold them all */
  requiredUpTo: Index;
  checkedUpTo: Index;
  last: Index;
  lastTerm: Term | undefined;
}

interface PendingRead {
  node: NodeId;
  incarnation: number;
  requiredIndex: Index;
  tick: number;
}

export class Checkers {
  private readonly leaderOfTerm = new Map<Term, NodeId>();
  /** (index, term) → [content digest, term of the entry before it] */
  private readonly entries = new Map<number, [number, Term]>();
  /** the canonical applied sequence: term and chained app digest at each index */
  private readonly canonTerm: Term[] = [0];
  private readonly canonDigest: number[] = [0];
  private readonly leaders = new Map<NodeId, LeaderWatch>();
  private readonly reads = new Map<number, PendingRead>();
  private readonly served = new Set<number>();
  private readonly votesSent = new Map<string, NodeId>();
  private readonly durableTerm = new Map<NodeId, Term>();
  readonly counts = { leaders: 0, applied: 0, readsServed: 0, messagesChecked: 0 };

  /** highest index applied on any node: every entry up to it is committed */
  get maxApplied(): Index {
    return this.canonTerm.length - 1;
  }
  canonicalDigest(i: Index): number | undefined {
    return this.canonDigest[i];
  }
  canonicalTerm(i: Index): Term | undefined {
    return this.canonTerm[i];
  }
  wasServed(ctx: number): boolean {
    return this.served.has(ctx);
  }
  leaderTerms(): ReadonlyMap<Term, NodeId> {
    return this.leaderOfTerm;
  }

  // ---- Election Safety (§5.2): at most one leader per term, from the core's trace ----
  onTrace(e: TraceEvent, incarnation: number): void {
    if (e.type !== 'becomeLeader') return;
    const prior = this.leaderOfTerm.get(e.term);
    if (prior !== undefined && prior !== e.id) violated('ElectionSafety', `${prior} and ${e.id} both became leader in term ${e.term}`);
    this.leaderOfTerm.set(e.term, e.id);
    this.counts.leaders++;
    // Leader Completeness, in its strongest form: everything applied anywhere before this
    // election was committed before it, so this leader must hold it (§5.4; a majority
    // that acked the entry intersects the majority that elected this leader).
    this.leaders.set(e.id, {
      incarnation, term: e.term, requiredUpTo: this.maxApplied, checkedUpTo: 0, last: -1, lastTerm: undefined,
    });
  }

  // ---- Log Matching (§5.3): (index, term) names one entry and one predecessor, forever ----
  private noteEntry(e: Entry, prevTerm: Term | undefined, where: string): void {
    if (prevTerm === undefined) return;
    const k = entryKey(e.index, e.term);
    const digest = chainDigest(0, e);
    const seen = this.entries.get(k);
    if (seen === undefined) {
      this.entries.set(k, [digest, prevTerm]);
    } else if (seen[0] !== digest || seen[1] !== prevTerm) {
      violated('LogMatching', `${where}: entry (${e.index}, term ${e.term}) differs from an earlier one with the same index and term ` +
        `(content ${seen[0] === digest ? 'same' : 'differs'}, previous term ${seen[1]} vs ${prevTerm})`);
    }
  }

  /** after `node` persisted `entries`; `log` already reflects the write */
  onPersist(node: NodeId, entries: readonly Entry[], log: LogView): void {
    for (let k = 0; k < entries.length; k++) {
      const e = entries[k]!;
      this.noteEntry(e, k === 0 ? log.term(e.index - 1) : entries[k - 1]!.term, `${node} persisted`);
    }
  }

  // ---- checks on every message as it leaves a node ----
  /** `disk`: the sender's data directory; what a node promised (its vote) binds that disk,
   *  and a node whose disk was lost is a new voter under the same id */
  onSend(m: Message, durable: DurableView, written: LogView, disk = ''): void {
    this.counts.messagesChecked++;
    if (m.type === 'append' && m.entries.length > 0) {
      if (m.entries[0]!.index !== m.prevIndex + 1) violated('LogMatching', `${m.from} sent append with prevIndex ${m.prevIndex} but first entry ${m.entries[0]!.index}`);
      for (let k = 0; k < m.entries.length; k++) {
        this.noteEntry(m.entries[k]!, k === 0 ? m.prevTerm : m.entries[k - 1]!.term, `${m.from} sent append to ${m.to}`);
      }
    }
    if (m.type === 'voteResp' && !m.reject) {
      const key = `${m.from}/${disk}@${m.term}`;
      const prior = this.votesSent.get(key);
      if (prior !== undefined && prior !== m.to) violated('VoteOncePerTerm', `${m.from} granted term ${m.term} to ${prior} and to ${m.to}`);
      this.votesSent.set(key, m.to);
    }
    this.checkDurableBeforeSend(m, durable, written);
  }

  /** what a message relies on must already survive a crash (Figure 2: "respond to RPCs
   *  only after updating stable storage") */
  private checkDurableBeforeSend(m: Message, durable: DurableView, written: LogView): void {
    const hs = durable.hardState();
    if (m.type === 'preVote') {
      // a pre-candidate asks for term+1 without adopting it (thesis §9.6)
      if (m.term > hs.term + 1) violated('DurableBeforeSend', `${m.from} sent preVote for term ${m.term} with durable term ${hs.term}`);
      return;
    }
    if (m.type === 'preVoteResp' && !m.reject) return; // a grant carries the asker's future term, adopts nothing
    if (m.term > hs.term) violated('DurableBeforeSend', `${m.from} sent ${m.type} in term ${m.term} but its durable term is ${hs.term}`);
    // A message of an older term than the durable one is superseded: the node can never act
    // in that term again, even after a crash, so what the message promised (a vote, an ack)
    // cannot be contradicted by a later incarnation. etcd's Ready carries such messages too
    // (a vote granted in term t, then term t+1 adopted, both in one Ready).
    if (m.term < hs.term) return;
    if (m.type === 'voteResp' && !m.reject && hs.vote !== m.to) {
      violated('DurableBeforeSend', `${m.from} granted its vote to ${m.to} in term ${m.term}, durable hard state is term ${hs.term} vote ${hs.vote}`);
    }
    if (m.type === 'appendResp' && !m.reject) {
      // acking index i promises the leader those entries survive a crash (§5.3)
      const snapIndex = durable.firstIndex() - 1;
      if (m.index > snapIndex && (m.index > durable.lastIndex() || durable.term(m.index) !== written.term(m.index))) {
        violated('DurableBeforeSend', `${m.from} acked index ${m.index} to ${m.to} but durably holds only up to ${durable.lastIndex()} ` +
          `(durable term there ${durable.term(m.index)}, written ${written.term(m.index)})`);
      }
    }
  }

  // ---- State Machine Safety (§5.4.3): every node applies the same entry at each index ----
  onApply(node: NodeId, e: Entry, digest: number): void {
    this.counts.applied++;
    const i = e.index;
    if (i < this.canonTerm.length) {
      if (this.canonTerm[i] !== e.term || this.canonDigest[i] !== digest) {
        violated('StateMachineSafety', `${node} applied (${i}, term ${e.term}, digest ${digest}) where another node applied ` +
          `(${i}, term ${this.canonTerm[i]}, digest ${this.canonDigest[i]})`);
      }
      return;
    }
    if (i !== this.canonTerm.length) violated('StateMachineSafety', `${node} applied index ${i} before anyone applied ${this.canonTerm.length}`);
    this.canonTerm.push(e.term);
    this.canonDigest.push(digest);
  }

  /** a node restored its app from a snapshot: the state must be the canonical one */
  onRestore(node: NodeId, index: Index, digest: number): void {
    const canon = this.canonDigest[index];
    if (canon === undefined) violated('StateMachineSafety', `${node} restored a snapshot at ${index}, which no node has applied`);
    if (canon !== digest) violated('StateMachineSafety', `${node} restored a snapshot at ${index} with digest ${digest}, canonical is ${canon}`);
  }

  // ---- ReadIndex linearizability (§6.4) ----
  onReadIssued(ctx: number, node: NodeId, incarnation: number, tick: number): void {
    this.reads.set(ctx, { node, incarnation, requiredIndex: this.maxApplied, tick });
  }
  /** `node` serves read `ctx` with its app at `applied`; returns the read's issue tick */
  onReadServed(ctx: number, node: NodeId, applied: Index, digest: number): number {
    const r = this.reads.get(ctx);
    if (r === undefined || r.node !== node) violated('ReadLinearizability', `${node} served read ${ctx}, which was not issued to it`);
    this.reads.delete(ctx);
    this.served.add(ctx);
    this.counts.readsServed++;
    if (applied < r.requiredIndex) {
      violated('ReadLinearizability', `${node} served read ${ctx} (issued at tick ${r.tick}) at applied ${applied}, ` +
        `but index ${r.requiredIndex} was already applied somewhere when it was issued: a stale read`);
    }
    if (this.canonDigest[applied] !== digest) violated('ReadLinearizability', `${node} served read ${ctx} from a state that is not the canonical one at ${applied}`);
    return r.tick;
  }
  /** reads of a crashed incarnation will never be served */
  dropReads(node: NodeId): void {
    for (const [ctx, r] of this.reads) if (r.node === node) this.reads.delete(ctx);
  }

  // ---- after every tick ----
  afterTick(nodes: readonly NodeSnapshot[]): void {
    for (const n of nodes) {
      const hs = n.durable.hardState();
      const key = `${n.id}/${n.disk ?? ''}`;
      const before = this.durableTerm.get(key) ?? 0;
      if (hs.term < before) violated('DurableTermMonotonic', `${n.id}'s durable term went from ${before} back to ${hs.term}`);
      this.durableTerm.set(key, hs.term);
      if (n.role === 'leader') this.checkLeader(n);
    }
  }

  private checkLeader(n: NodeSnapshot): void {
    const w = this.leaders.get(n.id);
    if (w === undefined || w.incarnation !== n.incarnation || w.term !== n.term) {
      violated('ElectionSafety', `${n.id} is leader in term ${n.term} without a becomeLeader trace event`);
    }
    const log = n.log;
    const snapIndex = log.firstIndex() - 1;
    // Leader Append-Only (§5.3): what the leader had at the end of the last tick is still there
    if (w.last >= 0 && w.last > snapIndex) {
      if (log.lastIndex() < w.last || log.term(w.last) !== w.lastTerm) {
        violated('LeaderAppendOnly', `leader ${n.id} (term ${n.term}) had (${w.last}, term ${w.lastTerm}) and now has ` +
          `${log.lastIndex() < w.last ? `a log ending at ${log.lastIndex()}` : `term ${log.term(w.last)} there`}`);
      }
    }
    w.last = log.lastIndex();
    w.lastTerm = log.term(w.last);
    // Leader Completeness (§5.4.1): every entry applied before the election is in its log
    for (let i = Math.max(w.checkedUpTo + 1, snapIndex + 1); i <= w.requiredUpTo; i++) {
      const t = log.term(i);
      if (t !== this.canonTerm[i]) {
        violated('LeaderCompleteness', `leader ${n.id} of term ${n.term} has ${t === undefined ? 'no entry' : `term ${t}`} at ${i}, ` +
          `but (${i}, term ${this.canonTerm[i]}) was applied before it was elected: a committed entry was lost`);
      }
    }
    w.checkedUpTo = Math.max(w.checkedUpTo, w.requiredUpTo);
  }
}
