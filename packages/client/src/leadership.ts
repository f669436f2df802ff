// Leadership of an election (docs/contract.md §4 "Leader election"), as the client can
// prove it. An election is a lock whose holder publishes a value, so a Leadership is a
// Lock in every way that matters for safety: `signal` aborts the moment the session's
// lease can no longer be proven (or the server says the leadership is gone: a resign, a
// revoke, the session's end), `resign()` aborts it before the request is sent, and
// `fencingToken` — the epoch every follower's write must carry — comes from the one global
// sequence. What it adds: the leader's `value` and `proclaim()`.
import { Lock, type LockOwner } from './lock.js';
import { NotHolderError } from './errors.js';
import type { CampaignGrant } from './wire.js';

/** What a Leadership needs beyond a Lock's owner. */
export interface LeadershipHost {
  proclaim(name: string, sessionId: string, value: string): Promise<{ value: string }>;
  /** after resign(): e.g. close the session client.campaign() opened for it */
  afterResign?: () => Promise<void>;
}

export class Leadership extends Lock {
  private current: string;

  constructor(owner: LockOwner, grant: CampaignGrant, private readonly host: LeadershipHost) {
    super(owner, grant);
    this.current = grant.value;
  }

  /** the value this leader published (its campaign's, then the last proclaimed) */
  get value(): string {
    return this.current;
  }

  /**
   * Replaces the published value. Throws LockLostError when the leadership can no longer
   * be proven; a NotHolderError from the server (no longer leader) also aborts `signal`.
   */
  async proclaim(value: string): Promise<void> {
    this.assertHeld();
    try {
      const r = await this.host.proclaim(this.name, this.sessionId, value);
      this.current = r.value;
    } catch (err) {
      if (err instanceof NotHolderError) this.markLost(`election ${this.name}: session ${this.sessionId} no longer leads (resigned, revoked or ended)`, err);
      throw err;
    }
  }

  /**
   * Steps down: `signal` aborts first, then the next candidate leads. Resigning twice is a
   * no-op, and so is resigning a leadership already lost (the server answers not_holder:
   * nothing is left to give up). Call it in `finally` either way: with the session that
   * client.campaign() opened, it also closes that session.
   */
  async resign(): Promise<void> {
    try {
      await this.release();
    } catch (err) {
      if (!(err instanceof NotHolderError)) throw err;
    } finally {
      await this.host.afterResign?.();
    }
  }
}
