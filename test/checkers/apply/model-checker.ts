// ModelAgreement (docs/simulation-lock.md "Checkers"): the reference model of the lock state
// machine (test/model/lock-model.ts) applies the committed log once, in index order, as the
// first node to apply each entry applied it, and every result and event the nodes produced
// must be the model's. The other lock checkers look at properties (one holder, tokens
// rising, FIFO, …); this one says the whole answer is what docs/lock-fsm.md prescribes,
// for every entry the Raft cluster commits under faults.
import type { ApplyOutput, Envelope } from '../../../src/lock-fsm/index.js';
import { LockModel } from '../../model/lock-model.js';

/** the lock FSM's defaults (src/lock-fsm/state.ts newCore): the simulated nodes use them */
const FSM_DEFAULTS = { maxSessions: 1_000_000, maxWaitersPerLock: 1000, idempotencyTtlMs: 600_000, idempotencyMaxKeys: 500_000 };

export class ModelAgreement {
  private readonly model = new LockModel(FSM_DEFAULTS);
  checked = 0;

  constructor(private readonly stable: (v: unknown) => string) {}

  /** the first apply of `index` anywhere produced `out`: null when the model agrees, else why not */
  onFirstApply(index: number, env: Envelope, out: ApplyOutput): string | null {
    const want = this.model.apply(index, env);
    this.checked++;
    const a = this.stable(out);
    const b = this.stable(want);
    return a === b ? null : `entry ${index} ${this.stable(env.cmd).slice(0, 300)}: the nodes answered ${a.slice(0, 600)}, the model ${b.slice(0, 600)}`;
  }
}
