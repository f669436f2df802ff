// Turns what the lessor says is due into proposals, with at most ONE proposal in flight per
// item (session, lock-delay, wait). The lessor re-reports an item every retryMs until it
// sees it applied; when commits are slower than that (a slow link, a small replication
// window), proposing every report would add entries faster than they commit and the log
// would only grow (found by the lock simulation, seeds 1152 and 1129). A repeat is proposed
// only once the earlier proposal's outcome is known (applied, lost or timed out).
import type { Command } from '../lock-fsm/index.js';

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
    // one item per grant: its token names it
    case 'expireHold':
      return `h\u0000${cmd.target}\u0000${cmd.fencingToken}`;
    default:
      return `${cmd.kind}\u0000${JSON.stringify(cmd)}`;
  }
}

export class LessorProposer {
  private readonly inFlight = new Set<string>();

  constructor(private readonly propose: (cmd: Command) => Promise<unknown>) {}

  /** propose each due command unless the same item's earlier proposal is still pending;
   *  returns how many were proposed */
  proposeDue(due: readonly Command[]): number {
    let n = 0;
    for (const cmd of due) {
      const k = itemKey(cmd);
      if (this.inFlight.has(k)) continue;
      this.inFlight.add(k);
      n++;
      const done = (): void => {
        this.inFlight.delete(k);
      };
      this.propose(cmd).then(done, done);
    }
    return n;
  }

  get pending(): number {
    return this.inFlight.size;
  }
}
