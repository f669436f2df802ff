// RaftLockService when leadership is lost while a command is in flight (found by
// jepsen-lite, 5 nodes, seed 4004: a leader stepped down (check-quorum) with an acquire in
// its log; the next leader committed it, the old leader — now a follower — applied it,
// resolved the proposal, waited for the grant as a follower and then answered 404
// session_not_found because its lessor (no longer leading) refused to renew the lease.
// The session was alive and held the lock; the client, told its session was gone,
// abandoned it). A deposed node cannot renew a lease, but that is an unknown outcome for
// the client to retry with its Idempotency-Key (504), never "your session is gone".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RaftLockService } from '../../src/node/lock-service.js';
import { LockApp } from '../../src/node/lock-app.js';
import { decodeCommand, encodeCommand } from '../../src/node/command-codec.js';
import { Lessor } from '../../src/lock-fsm/index.js';
import { Metrics } from '../../src/metrics.js';
import { ApiError } from '../../src/api/errors.js';
import type { RaftDriver, ProposalOutcome } from '../../src/raft/node.js';
import type { Membership } from '../../src/node/membership.js';
import type { ClusterOps } from '../../src/node/cluster-ops.js';
import type { RequestContext } from '../../src/api/service.js';

/** A driver stand-in: proposals apply at once, or wait until the test lets them commit. */
class FakeDriver {
  currentRole: 'leader' | 'follower' = 'leader';
  currentLeader: string | null = 'n1';
  appliedIndex = 0;
  hold = false;
  private held: { bytes: Uint8Array; resolve: (o: ProposalOutcome) => void }[] = [];
  constructor(private readonly app: LockApp, private readonly svc: () => RaftLockService) {}

  propose(bytes: Uint8Array): Promise<ProposalOutcome> {
    if (this.currentRole !== 'leader') return Promise.resolve({ ok: false, kind: 'rejected', reason: 'not_leader' });
    return new Promise((resolve) => {
      if (this.hold) this.held.push({ bytes, resolve });
      else resolve(this.apply(bytes));
    });
  }

  /** commit and apply everything held back, in order (as the next leader would) */
  commitHeld(): void {
    for (const h of this.held.splice(0)) h.resolve(this.apply(h.bytes));
  }

  /** an entry another leader committed, applied here */
  applyForeign(bytes: Uint8Array): void {
    this.apply(bytes);
  }

  private apply(bytes: Uint8Array): ProposalOutcome {
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

function setup() {
  let now = 1000;
  const app = new LockApp({}, () => undefined);
  const lessor = new Lessor({ tickMs: 100 });
  const ref: { svc?: RaftLockService } = {};
  const driver = new FakeDriver(app, () => ref.svc!);
  const membership = { selfState: () => 'member', address: () => undefined, notReadyReason: () => null } as unknown as Membership;
  const svc = new RaftLockService({
    nodeId: 'n1',
    driver: driver as unknown as RaftDriver,
    app,
    lessor,
    metrics: new Metrics(),
    session: { defaultTtlMs: 2000, minTtlMs: 100, maxTtlMs: 60_000, lockDelayMs: 0 },
    membership,
    clusterOps: {} as ClusterOps,
    nowMs: () => now,
    wallMs: () => 1_700_000_000_000 + now,
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
  return { svc, driver, app, ctx, depose, tick: (ms: number) => (now += ms) };
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return err.code;
  }
}

test('an acquire granted after this leader stepped down answers 504, not session_not_found', async () => {
  const { svc, driver, app, ctx, depose } = setup();
  const { session_id: s } = await svc.openSession({ ttlMs: 2000 }, ctx('open'));
  driver.hold = true;
  const acq = codeOf(svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('k1')));
  depose();
  driver.commitHeld(); // the next leader commits it; this node applies it as a follower
  assert.equal(app.fsm.getLock('L').holder?.sessionId, s, 'the grant did happen');
  assert.equal(await acq, 'timeout');
  assert.ok(app.fsm.getSession(s), 'and the session is alive');
});

test('a queued acquire whose queue answer reaches a deposed leader answers 504, not session_not_found', async () => {
  const { svc, driver, app, ctx, depose } = setup();
  const { session_id: a } = await svc.openSession({ ttlMs: 2000 }, ctx('oa'));
  const { session_id: b } = await svc.openSession({ ttlMs: 2000 }, ctx('ob'));
  const held = await svc.acquire('L', { sessionId: a, waitMs: 0 }, ctx('ka'));
  assert.equal(held.session_id, a);
  driver.hold = true;
  const wait = codeOf(svc.acquire('L', { sessionId: b, waitMs: 5000 }, ctx('kb')));
  depose();
  driver.commitHeld(); // 'queued', learned as a follower
  driver.applyForeign(encodeCommand({ atMs: 1, cmd: { kind: 'release', name: 'L', sessionId: a } })); // the new leader hands L to b
  assert.equal(app.fsm.getLock('L').holder?.sessionId, b);
  assert.equal(await wait, 'timeout');
});

test('a keepalive or renew that outlives its leader answers 503, not session_not_found', async () => {
  const { svc, ctx, depose, driver } = setup();
  const { session_id: s } = await svc.openSession({ ttlMs: 2000 }, ctx('open'));
  await svc.acquire('L', { sessionId: s, waitMs: 0 }, ctx('k'));
  // the read barrier passes, then leadership goes before the lease is renewed
  const realReadIndex = driver.readIndex.bind(driver);
  driver.readIndex = () => realReadIndex().then((r) => (depose(), r));
  assert.equal(await codeOf(svc.keepalive(s, ctx())), 'unavailable');
  driver.currentRole = 'leader';
  svc.onRoleChange(true);
  driver.readIndex = () => realReadIndex().then((r) => (depose(), r));
  assert.equal(await codeOf(svc.renew('L', s, ctx())), 'unavailable');
});
