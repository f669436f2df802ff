// What the leader knows about each follower's log (etcd-io/raft tracker/progress.go and
// tracker/inflights.go, simplified). Invariants: 0 <= match < next; match is only ever
// raised by an acknowledgement from the follower itself (never from what we sent), and
// only lowered (to 0) when the follower proves that its log went backwards (regressed).
import { assert } from '../../assert.js';
import type { Index, ProgressState, ProgressStatus } from './types.js';

/** Bounded window of append messages in flight to one follower, identified by the last
 *  index each carried. Full means: stop sending until acks free slots (flow control). */
export class Inflights {
  private readonly buf: Index[] = [];
  constructor(readonly size: number) {
    assert(Number.isInteger(size) && size >= 1, `Inflights.size must be an integer >= 1, got ${size}`);
  }
  add(last: Index): void {
    assert(!this.full(), 'Inflights.add on a full window');
    const prev = this.buf[this.buf.length - 1];
    assert(prev === undefined || last > prev, `Inflights.add(${last}) not above previous ${prev}`);
    this.buf.push(last);
  }
  /** an ack up to `to` frees every message whose last index is <= to */
  freeLE(to: Index): void {
    let k = 0;
    while (k < this.buf.length && this.buf[k]! <= to) k++;
    if (k > 0) this.buf.splice(0, k);
  }
  freeFirstOne(): void {
    this.buf.shift();
  }
  full(): boolean {
    return this.buf.length >= this.size;
  }
  count(): number {
    return this.buf.length;
  }
  reset(): void {
    this.buf.length = 0;
  }
}

export class Progress {
  /** highest index known to be replicated on the follower (acknowledged by it) */
  match: Index;
  /** next index to send; match < next */
  next: Index;
  state: ProgressState = 'probe';
  /** in 'snapshot': index of the snapshot being sent */
  pendingSnapshot: Index = 0;
  /** heard from the follower since the last check-quorum round (§6.2 leader lease) */
  recentActive = false;
  /** in 'probe': one append was sent and no answer came yet; send no more until the
   *  answer or the next heartbeat response */
  probeSent = false;
  learner: boolean;
  /** after its log went backwards (regressed): the index it had acknowledged, which it
   *  must hold again before its ReadIndex acks count; 0 otherwise */
  recoverTo: Index = 0;
  /** a rejection said its log agrees with ours only below `match`: a stale rejection, or
   *  its disk lost entries it acknowledged. Until it acknowledges `match` again, heartbeats
   *  carry `match`, so the follower can tell even when our commit index is below what it
   *  lost (docs/raft-core.md "A follower whose log went backwards") */
  matchInDoubt = false;
  /** the incarnation whose answers this progress records (docs/membership.md, "Incarnations") */
  inc: string | undefined = undefined;
  readonly inflights: Inflights;

  constructor(next: Index, maxInflight: number, learner: boolean) {
    this.match = 0;
    this.next = Math.max(next, 1);
    this.learner = learner;
    this.inflights = new Inflights(maxInflight);
  }

  private resetState(state: ProgressState): void {
    this.state = state;
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // after a snapshot, resume right after it (or after match if that is further)
    if (this.state === 'snapshot') {
      const pending = this.pendingSnapshot;
      this.resetState('probe');
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState('probe');
      this.next = this.match + 1;
    }
  }
  becomeReplicate(): void {
    this.resetState('replicate');
    this.next = this.match + 1;
  }
  becomeSnapshot(snapshotIndex: Index): void {
    this.resetState('snapshot');
    this.pendingSnapshot = snapshotIndex;
  }

  /** an append carrying entries up to `last` (or none: last = next - 1) was sent */
  sentEntries(count: number, last: Index): void {
    if (this.state === 'replicate') {
      if (count > 0) {
        // optimistic pipelining: assume it arrives
        this.next = last + 1;
        this.inflights.add(last);
      }
    } else if (this.state === 'probe') {
      this.probeSent = true;
    } else {
      assert(false, `sentEntries in state ${this.state}`);
    }
  }

  /** an ack for `n` arrived: raise match/next. Returns false if the ack is stale. */
  maybeUpdate(n: Index): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    if (this.recoverTo > 0 && this.match >= this.recoverTo) this.recoverTo = 0;
    if (n >= this.match) this.matchInDoubt = false;
    return updated;
  }

  /**
   * The follower's log went backwards (it rejected an index it had acknowledged): nothing
   * it acknowledged can be trusted any more, so match is forgotten (it counts for no
   * commit until it acknowledges again), its ReadIndex acks wait until it holds again
   * what it had acknowledged (recoverTo), and it is probed from `next`.
   */
  regressed(next: Index): void {
    assert(Number.isSafeInteger(next) && next >= 1, `regressed: next must be an index >= 1, got ${next}`);
    this.recoverTo = Math.max(this.recoverTo, this.match);
    this.match = 0;
    this.matchInDoubt = false;
    this.resetState('probe');
    this.next = next;
  }

  /**
   * The follower rejected an append whose prevIndex was `rejected`; `matchHint` is the
   * leader's best guess of where the logs agree (fast back-tracking, §5.3). Returns false
   * if the rejection is stale (answers an append that no longer matters).
   */
  maybeDecrTo(rejected: Index, matchHint: Index): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }

  status(): ProgressStatus {
    const st: ProgressStatus = { match: this.match, next: this.next, state: this.state, learner: this.learner, recentActive: this.recentActive };
    if (this.recoverTo > 0) st.recoverTo = this.recoverTo;
    return st;
  }
}
