// The leader's way into the log: a command is proposed, committed and applied, and its
// answer (or the driver's outcome, as a Failure the API maps) returned; a linearizable read waits for
// a ReadIndex quorum round that starts after the request arrived (docs/contract.md "TTL
// semantics"). Only the leader does either. Every proposal is stamped with log time,
// never this node's wall clock (log-clock.ts, docs/lock-fsm.md "Log time").
import type { ApplyOutput, ApplyResult, Command, Envelope } from '../../lock-fsm/index.js';
import { InvalidCommandError } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import type { RequestContext } from '../../api/service.js';
import type { ProposalOutcome } from '../../raft/driver.js';
import { encodeCommand } from '../app/command-codec.js';
import { LogClock } from './log-clock.js';
import { keyBinding, type KeyedRequest } from './request-digest.js';
import type { ServiceDeps } from './service-deps.js';

/** The request's context for a follow-up command of the same request (a withdrawal, an
 *  acquire asked again): without the Idempotency-Key, which names the first command only. */
export function unkeyed(ctx: RequestContext): RequestContext {
  return { signal: ctx.signal, ...(ctx.principal !== undefined ? { principal: ctx.principal } : {}) };
}

export class LeaderLog {
  /** stamps every proposal's atMs */
  readonly clock: LogClock;

  constructor(private readonly d: Pick<ServiceDeps, 'driver' | 'app' | 'metrics' | 'nowMs' | 'readTimeoutMs'>) {
    this.clock = new LogClock({ monoMs: () => d.nowMs(), appliedLogTimeMs: () => d.app.fsm.logTimeMs });
  }

  /**
   * Propose a request's first command and wait for it to apply; map the driver's outcome
   * to failures. `request`: the client's request the command carries out, which its
   * Idempotency-Key is bound to (request-digest.ts); required when ctx has a key.
   *
   * "Am I the leader?" is not asked here: the route's routing() decided it in this same
   * turn (nothing is awaited between it and the proposal), and the driver's own check when
   * the proposal is queued (RaftDriver.enqueueProposal) is the authoritative one; a
   * proposal of a term this node no longer leads is answered lost or unknown at commit.
   * A command proposed after the request awaited something goes through followUp.
   */
  async submit(cmd: Command, ctx: RequestContext, request?: KeyedRequest): Promise<ApplyResult> {
    return (await this.submitOutput(cmd, ctx, request)).result;
  }

  /** A later command of the same request (an acquire asked again, a withdrawal, a fresh
   *  session id): time has passed since routing() decided, so leadership is checked again
   *  first and, lost, answered 503 before anything is proposed. */
  async followUp(cmd: Command, ctx: RequestContext, request?: KeyedRequest): Promise<ApplyResult> {
    this.requireLeader();
    return (await this.submitOutput(cmd, ctx, request)).result;
  }

  /** submit, keeping whether the answer is a stored first answer (ApplyOutput.replayed) */
  async submitOutput(cmd: Command, ctx: RequestContext, request?: KeyedRequest): Promise<ApplyOutput> {
    const key = ctx.idempotencyKey;
    // every keyed command names the request it answers: a key bound to nothing would
    // replay its first answer to whatever reuses it (docs/lock-fsm.md "Idempotency")
    if (key !== undefined && request === undefined) throw new Failure('internal', `a ${cmd.kind} command carries an Idempotency-Key but not its request (a bug: follow-up commands go unkeyed)`);
    const env: Envelope = key === undefined ? { atMs: this.clock.stamp(), cmd } : { atMs: this.clock.stamp(), idempotencyKey: key, keyBinding: keyBinding(ctx, request!), cmd };
    let bytes: Uint8Array;
    try {
      bytes = encodeCommand(env); // validates: what apply() will accept; refuse here rather than log a no-op
    } catch (err) {
      if (err instanceof InvalidCommandError) throw new Failure('invalid_request', err.message);
      throw err;
    }
    const out = await this.d.driver.propose(bytes);
    return this.proposalResult(out);
  }

  /** Propose a command no request waits for (the lessor's, a cancel for a client that
   *  went away): stamped like any other, its outcome left to the caller. */
  send(cmd: Command): Promise<ProposalOutcome<ApplyOutput>> {
    return this.d.driver.propose(encodeCommand({ atMs: this.clock.stamp(), cmd }));
  }

  /** ReadIndex: leadership confirmed by a quorum round that began after the request, and
   *  this node has applied through the read index. */
  async readBarrier(): Promise<void> {
    this.requireLeader();
    const r = await this.d.driver.readIndex(this.d.readTimeoutMs);
    if (r.ok) return;
    if (r.reason === 'timeout') throw new Failure('timeout', 'could not confirm leadership with a quorum in time');
    throw new Failure('unavailable', 'this node is no longer the leader');
  }

  /** `view()` of the applied state, at the consistency the request asked for:
   *  linearizable after the read barrier; stale as this node has applied it, leader or not */
  async read<T>(consistency: 'linearizable' | 'stale', view: () => T): Promise<T> {
    if (consistency === 'linearizable') await this.readBarrier();
    return view();
  }

  private requireLeader(): void {
    if (this.d.driver.currentRole !== 'leader') throw new Failure('unavailable', 'this node is not the leader');
  }

  private proposalResult(out: ProposalOutcome<ApplyOutput>): ApplyOutput {
    const m = this.d.metrics;
    if (out.ok) {
      m.proposal('committed');
      return out.result;
    }
    switch (out.kind) {
      case 'rejected':
        m.proposal(out.reason === 'not_leader' ? 'not_leader' : 'dropped');
        if (out.reason === 'overloaded') throw new Failure('too_many_requests', 'too many proposals in flight on the leader');
        throw new Failure('unavailable', `the proposal was refused (${out.reason}); nothing was applied`);
      case 'lost':
        m.proposal('lost');
        throw new Failure('unavailable', 'leadership changed before the command committed; nothing was applied');
      case 'unknown':
        m.proposal('timeout');
        throw new Failure('timeout', 'the command was proposed but is not known to be committed; retry with the same Idempotency-Key');
    }
  }
}
