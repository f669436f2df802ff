// A RaftLockService on a stand-in driver (proposals apply at once, or when the test lets
// them commit), for tests of the service's answers around leadership changes and shutdown.
import assert from 'node:assert/strict';
import { RaftLockService } from '../../../src/server/services/lock-service.js';
import { LockApp } from '../../../src/server/app/lock-app.js';
import { decodeCommand } from '../../../src/server/app/command-codec.js';
import { Lessor, type ApplyOutput } from '../../../src/lock-fsm/index.js';
import { Metrics } from '../../../src/metrics.js';
import { Failure } from '../../../src/api/failure.js';
import type { Result } from '../../../src/api/service-result.js';
import type { RaftDriver, ProposalOutcome } from '../../../src/raft/driver.js';
import type { Membership } from '../../../src/server/membership/membership.js';
import type { ClusterOps } from '../../../src/server/membership/cluster-ops.js';
import type { RequestContext } from '../../../src/api/service.js';

/** A driver stand-in: proposals apply at once, or wait until the test lets them commit. */
export class FakeDriver {
  currentRole: 'leader' | 'follower' = 'leader';
  currentLeader: string | null = 'n1';
  currentTerm = 1;
  appliedIndex = 0;
  hold = false;
  private held: { bytes: Uint8Array; resolve: (o: ProposalOutcome<ApplyOutput>) => void }[] = [];
  constructor(private readonly app: LockApp, private readonly svc: () => RaftLockService) {}

  propose(bytes: Uint8Array): Promise<ProposalOutcome<ApplyOutput>> {
    if (this.currentRole !== 'leader') return Promise.resolve({ ok: false, kind: 'rejected', reason: 'not_leader' });
    return new Promise((resolve) => {
      if (this.hold) this.held.push({ bytes, resolve });
      else resolve(this.apply(bytes));
    });
  }

  /** how many proposals are held back */
  heldCount(): number {
    return this.held.length;
  }

  /** the kinds of the commands held back, in order */
  heldKinds(): string[] {
    return this.held.map((h) => decodeCommand(h.bytes).cmd.kind);
  }

  /** commit and apply everything held back, in order (as the next leader would) */
  commitHeld(): void {
    for (const h of this.held.splice(0)) h.resolve(this.apply(h.bytes));
  }

  /** commit and apply the first proposal held back (the others stay held) */
  commitFirst(): void {
    const h = this.held.shift();
    if (h) h.resolve(this.apply(h.bytes));
  }

  /** answer everything held back 'unknown' (commit slower than the proposal timeout) and
   *  return the entries, for the test to apply later (applyForeign) */
  timeOutHeld(): Uint8Array[] {
    return this.held.splice(0).map((h) => {
      h.resolve({ ok: false, kind: 'unknown' });
      return h.bytes;
    });
  }

  /** an entry nobody here proposed, committed after what is held back so far (commitHeld) */
  holdForeign(bytes: Uint8Array): void {
    this.held.push({ bytes, resolve: () => undefined });
  }

  /** an entry another leader committed, applied here */
  applyForeign(bytes: Uint8Array): void {
    this.apply(bytes);
  }

  private apply(bytes: Uint8Array): ProposalOutcome<ApplyOutput> {
    decodeCommand(bytes); // what a real log would carry
    const index = ++this.appliedIndex;
    const out = this.app.apply({ index, term: 1, kind: 'normal', data: bytes });
    this.svc().onApplied(out);
    return { ok: true, index, term: 1, result: out };
  }

  readIndex(): Promise<{ ok: true; index: number } | { ok: false; reason: 'not_leader' }> {
    return Promise.resolve(this.currentRole === 'leader' ? { ok: true, index: this.appliedIndex } : { ok: false, reason: 'not_leader' });
  }

  status() {
    return { leader: this.currentLeader, commit: this.appliedIndex, term: 1, role: this.currentRole };
  }
}

export function setup() {
  let now = 1000;
  const app = new LockApp({}, () => undefined);
  const lessor = new Lessor({ tickMs: 100 });
  const ref: { svc?: RaftLockService } = {};
  const driver = new FakeDriver(app, () => ref.svc!);
  const metrics = new Metrics();
  const membership = { selfState: () => 'member', address: () => undefined, notReadyReason: () => null } as unknown as Membership;
  const svc = new RaftLockService({
    nodeId: 'n1',
    driver: driver as unknown as RaftDriver<ApplyOutput>,
    app,
    lessor,
    metrics,
    session: { defaultTtlMs: 2000, minTtlMs: 100, maxTtlMs: 60_000, lockDelayMs: 0 },
    membership,
    clusterOps: {} as ClusterOps,
    nowMs: () => now,
    readTimeoutMs: 1000,
    electionTimeoutMaxMs: 1000,
  });
  ref.svc = svc;
  svc.onRoleChange(true);
  const ctx = (key?: string): RequestContext => ({ signal: new AbortController().signal, ...(key ? { idempotencyKey: key } : {}) });
  const depose = (): void => {
    driver.currentRole = 'follower';
    driver.currentLeader = 'n2';
    svc.onRoleChange(false);
  };
  /** this node leads again, in a new term (as the next leader would: its lessor takes office) */
  const promote = (): void => {
    driver.currentRole = 'leader';
    driver.currentLeader = 'n1';
    driver.currentTerm++;
    svc.onRoleChange(true);
  };
  return { svc, driver, app, lessor, metrics, ctx, depose, promote, tick: (ms: number) => (now += ms), now: () => now };
}

/** the code of the Failure a call is refused with (the services answer a Result and speak
 *  no HTTP: src/api/service-result.ts), or 'ok'. A call that rejects fails the test: the
 *  services refuse by their answer, they do not throw. */
export async function codeOf(p: Promise<Result<unknown>>): Promise<string> {
  const r = await p;
  return r.ok ? 'ok' : r.failure.code;
}

/** the Failure a call is refused with; the test fails if the call succeeds */
export async function errorOf(p: Promise<Result<unknown>>): Promise<Failure> {
  const r = await p;
  if (r.ok) assert.fail('the call succeeded');
  assert.ok(r.failure instanceof Failure);
  return r.failure;
}

/** the value of a call that must succeed; the test fails with the refusal otherwise */
export function valueOf<T>(r: Result<T>): T {
  if (!r.ok) assert.fail(`the call was refused: ${r.failure.code}: ${r.failure.message}`);
  return r.value;
}

/** the Failure a call of a room below the services rejects with (the leader log refuses by
 *  rejecting; the services turn that into a refusal); the test fails if it resolves */
export async function rejectionOf(p: Promise<unknown>): Promise<Failure> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof Failure, String(err));
    return err;
  }
  assert.fail('the call resolved');
}
