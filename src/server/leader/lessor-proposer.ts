// Turns what the lessor says is due into proposals, with at most one copy per item
// (session, lock-delay, wait, max hold) that can still commit in this leader's term. The
// lessor re-reports an item every retryMs until it sees it applied; when commits are
// slower than that (a slow link, a small replication window), proposing every report would
// add entries faster than they commit and the log would only grow (found by the lock
// simulation, seeds 1152 and 1129). Nor is an 'unknown' answer (the proposal timeout) a
// reason to propose again: the copy is still in the log and may commit. So a repeat is
// proposed only once the earlier copy is known to be lost or done:
//  - its proposal was answered applied, lost or refused; or
//  - it timed out ('unknown', at index i of term t) and this node has since applied index
//    i (the slot committed, with that copy or without it: either way it can no longer
//    commit later), or
//  - the term changed (the copy belonged to a term that is over; a leader in office again
//    proposes afresh, at most once per term).
// Duplicates that do commit are no-ops (each command names its item: docs/lock-fsm.md
// "Lessor commands name what they end"); this bounds how many there can be.
import type { Command } from '../../lock-fsm/index.js';
import type { ProposalOutcome } from '../../raft/driver.js';

function itemKey(cmd: Command): string {
  switch (cmd.kind) {
    case 'expireSession':
      return `s\u0000${cmd.sessionId}`;
    // a delay or wait is one item per `since` (the index that began it): a later one of the
    // same lock or session is not held up behind an earlier one's proposal
    case 'endLockDelay':
      return `d\u0000${cmd.name}\u0000${cmd.since ?? 0}`;
    case 'cancelWait':
      return `w\u0000${cmd.name}\u0000${cmd.sessionId}\u0000${cmd.since ?? 0}`;
    case 'semCancelWait':
      return `v\u0000${cmd.name}\u0000${cmd.sessionId}\u0000${cmd.since}`;
    // one item per grant: its token names it
    case 'expireHold':
      return `h\u0000${cmd.target}\u0000${cmd.fencingToken}`;
    default:
      return `${cmd.kind}\u0000${JSON.stringify(cmd)}`;
  }
}

/** what the gate reads of the node (RaftDriver has both) */
export interface ProposerView {
  readonly currentTerm: number;
  readonly appliedIndex: number;
}

/** an item's copy that may still commit: proposed in `term`, at `index` once the driver
 *  said where (an 'unknown' answer) */
interface Copy {
  term: number;
  index: number | undefined;
}

export class LessorProposer {
  private readonly copies = new Map<string, Copy>();

  constructor(
    private readonly propose: (cmd: Command) => Promise<unknown>,
    /** the node's term and applied index; without it, a copy answered 'unknown' no longer
     *  holds a repeat back (only tests leave it out) */
    private readonly view?: ProposerView,
  ) {}

  /** propose each due command unless an earlier copy of the same item may still commit;
   *  returns how many were proposed */
  proposeDue(due: readonly Command[]): number {
    let n = 0;
    for (const cmd of due) {
      const k = itemKey(cmd);
      if (this.holds(k)) continue;
      const copy: Copy = { term: this.view?.currentTerm ?? 0, index: undefined };
      this.copies.set(k, copy);
      n++;
      const settled = (o: unknown): void => {
        if (this.copies.get(k) !== copy) return; // a newer copy (a later term) owns the item
        const out = o as ProposalOutcome | undefined;
        if (this.view !== undefined && out !== undefined && out.ok === false && out.kind === 'unknown' && out.index !== undefined && out.term !== undefined) {
          copy.term = out.term;
          copy.index = out.index;
        } else this.copies.delete(k);
      };
      this.propose(cmd).then(settled, () => settled(undefined));
    }
    return n;
  }

  /** may an earlier copy of this item still commit? (forgets it once it cannot) */
  private holds(k: string): boolean {
    const c = this.copies.get(k);
    if (c === undefined) return false;
    const v = this.view;
    if (v !== undefined && (v.currentTerm !== c.term || (c.index !== undefined && v.appliedIndex >= c.index))) {
      this.copies.delete(k);
      return false;
    }
    return true;
  }

  /** would this command be held back behind an earlier copy now? */
  isHeld(cmd: Command): boolean {
    return this.holds(itemKey(cmd));
  }

  /** items with a copy that may still commit */
  get pending(): number {
    return this.copies.size;
  }
}
