// Membership's rules against a scripted driver: idempotent add/promote, automatic
// promotion of a marked learner once caught up (docs/membership.md),
// address conflicts, the strict quorum check, one change at a time, a snapshot before the
// first learner of a never-compacted log, the address book (replicated vs local), and the
// node's own standing (voter/learner/joining/removed).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Failure } from '../../../src/api/failure.js';
import type { Result } from '../../../src/api/service-result.js';
import { applyConfChange } from '../../../src/raft/core/conf.js';
import type { ConfChange, ConfState, NodeId, ProgressStatus } from '../../../src/raft/core/types.js';
import type { ProposalOutcome, RaftDriver } from '../../../src/raft/driver.js';
import type { Transport } from '../../../src/raft/seams.js';
import { LockApp } from '../../../src/server/app/lock-app.js';
import { Membership } from '../../../src/server/membership/membership.js';
import { decodeMemberContext, encodeAddressContext } from '../../../src/server/membership/member-address.js';
import { PeerContact } from '../../../src/server/membership/peer-contact.js';

/** Just what Membership reads from the driver; conf changes apply at once. */
class ScriptedDriver {
  conf: ConfState = { voters: ['n1', 'n2', 'n3'], learners: [] };
  role: 'leader' | 'follower' = 'leader';
  progress: Record<NodeId, ProgressStatus> = {};
  lastIndex = 100;
  proposals: ConfChange[] = [];
  compactions = 0;
  term = 2;
  /** a member marked active has sent a message of the current term just now */
  readonly contact = new PeerContact(() => performance.now());
  /** answers to the next proposals, then 'ok' */
  script: ProposalOutcome[] = [];
  constructor() {
    for (const id of this.conf.voters) this.setProgress(id, 100, true);
  }
  setProgress(id: string, match: number, active: boolean, learner = false): void {
    this.progress[id] = { match, next: match + 1, state: 'replicate', learner, recentActive: active };
    if (active) this.contact.note({ type: 'heartbeatResp', from: id, to: 'n1', term: this.term, ctx: 0 });
  }
  get currentRole(): string {
    return this.role;
  }
  status() {
    return { role: this.role, term: this.term, conf: this.conf, progress: this.progress, lastIndex: this.lastIndex };
  }
  async proposeConfChange(cc: ConfChange): Promise<ProposalOutcome> {
    this.proposals.push(cc);
    const out = this.script.shift() ?? { ok: true, index: ++this.lastIndex, term: 2, result: undefined };
    if (out.ok) {
      this.conf = applyConfChange(this.conf, cc);
      if (cc.type !== 'removeNode' && !this.progress[cc.nodeId]) this.setProgress(cc.nodeId, 0, true, cc.type === 'addLearner');
      if (cc.type === 'addVoter') this.progress[cc.nodeId]!.learner = false;
    }
    return out;
  }
  async compactNow(): Promise<boolean> {
    this.compactions++;
    return true;
  }
}

function setup(o: { joining?: boolean; snapshotIndex?: number; self?: string } = {}) {
  const driver = new ScriptedDriver();
  const app = new LockApp({ maxSessions: 100, maxWaitersPerLock: 10 }, () => undefined);
  const peers: ReadonlyMap<string, string>[] = [];
  const transport = { setPeers: (p: ReadonlyMap<string, string>) => peers.push(new Map(p)) } as unknown as Transport;
  let snap = o.snapshotIndex ?? 0;
  const m = new Membership({
    self: o.self ?? 'n1', app, driver: () => driver as unknown as RaftDriver, transport,
    snapshotIndex: () => snap, promoteLagEntries: 10, catchUpTimeoutMs: 300, joining: o.joining ?? false, contact: driver.contact,
    nowMs: () => performance.now(), logger: pino({ level: 'silent' }),
  });
  m.seed(['n1', 'n2', 'n3'].map((id) => ({ id, api: `http://127.0.0.1:1700${id[1]}`, peer: `http://127.0.0.1:1710${id[1]}` })));
  return { driver, app, peers, m, setSnapshot: (i: number) => (snap = i) };
}

const n4 = { id: 'n4', api: 'http://127.0.0.1:17004', peer: 'http://127.0.0.1:17104' };
const signal = new AbortController().signal;
const code = (c: string) => (e: unknown) => e instanceof Failure && e.code === c;
/** the change was made (or found made): Membership answers a Result, never rejects */
async function done(p: Promise<Result<void>>): Promise<void> {
  const r = await p;
  assert.ok(r.ok, r.ok ? '' : `refused: ${r.failure.code} ${r.failure.message}`);
}
/** the change was refused with a Failure that `pred` accepts */
async function refusedWith(p: Promise<Result<void>>, pred: (f: Failure) => boolean, message?: string): Promise<void> {
  const r = await p;
  assert.ok(!r.ok, 'the change was refused');
  assert.ok(pred(r.failure), message ?? `unexpected refusal: ${r.failure.code} ${r.failure.message}`);
}
const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 10));
async function eventuallyTrue(fn: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!fn()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await tick();
  }
}

describe('Membership', () => {
  it('add: snapshot first on a never-compacted log, then the learner entry marked for promotion; answered without waiting for the node', async () => {
    const { driver, m, peers, app } = setup();
    await done(m.add(n4, { learnerOnly: false })); // n4 is not running: match 0 throughout
    assert.equal(driver.compactions, 1, 'a snapshot before the first learner');
    assert.deepEqual(driver.proposals.map((p) => p.type), ['addLearner']);
    assert.deepEqual(decodeMemberContext('n4', driver.proposals[0]!.context), { address: n4, promote: true });
    assert.equal(peers.at(-1)?.get('n4'), n4.peer, 'the transport knows the newcomer before its entry is appended');
    assert.equal(app.members.has('n4'), false, 'the replicated book changes only by applying the entry');
    m.onConfApplied(driver.proposals[0]!);
    assert.deepEqual(app.members.get('n4'), n4);
    assert.equal(m.promotionPending('n4'), true);
    // repeated (a retry, or the node's own --join): nothing proposed again
    await done(m.add(n4, { learnerOnly: false }));
    assert.equal(driver.proposals.length, 1);
  });

  it('automatic promotion: the leader promotes a marked learner from its tick once it is within the lag, not before', async () => {
    const { driver, m, app } = setup({ snapshotIndex: 50 });
    await done(m.add(n4, { learnerOnly: false }));
    m.onConfApplied(driver.proposals[0]!);
    m.onTick();
    await tick();
    assert.deepEqual(driver.proposals.map((p) => p.type), ['addLearner'], 'not caught up (match 0): no promotion');
    driver.setProgress('n4', 80, true, true); // lag 21 > 10
    m.onTick();
    await tick();
    assert.equal(driver.proposals.length, 1, 'still too far behind');
    driver.setProgress('n4', 95, true, true); // lag 6 <= 10
    await eventuallyTrue(() => {
      m.onTick();
      return driver.proposals.length === 2;
    });
    assert.equal(driver.proposals[1]!.type, 'addVoter');
    assert.deepEqual(driver.conf.voters, ['n1', 'n2', 'n3', 'n4']);
    m.onConfApplied(driver.proposals[1]!);
    assert.equal(app.promotionPending.has('n4'), false, 'the mark goes with the promotion');
    assert.equal(m.promotionPending('n4'), false);
  });

  it('a follower never promotes; a new leader does (the mark is replicated)', async () => {
    const { driver, m, app } = setup({ snapshotIndex: 50 });
    driver.conf = { voters: ['n1', 'n2', 'n3'], learners: ['n4'] };
    m.onConfApplied({ type: 'addLearner', nodeId: 'n4', context: encodeAddressContext(n4, { promote: true }) });
    assert.equal(app.promotionPending.has('n4'), true);
    driver.setProgress('n4', 100, true, true);
    driver.role = 'follower';
    m.onTick();
    await tick();
    assert.equal(driver.proposals.length, 0);
    driver.role = 'leader';
    await eventuallyTrue(() => {
      m.onTick();
      return driver.proposals.some((p) => p.type === 'addVoter' && p.nodeId === 'n4');
    });
  });

  it('one new voter at a time: a second add waits (409) while a marked learner is not promoted; learner-only adds and removals are not blocked', async () => {
    const { driver, m } = setup({ snapshotIndex: 50 });
    await done(m.add(n4, { learnerOnly: false }));
    m.onConfApplied(driver.proposals[0]!);
    const n5 = { id: 'n5', api: 'http://127.0.0.1:17005', peer: 'http://127.0.0.1:17105' };
    await refusedWith(m.add(n5, { learnerOnly: false }), (e) => code('conflict')(e) && /n4 was added and waits to be promoted/.test((e as Error).message) && (e as Failure).details?.['conflict'] !== 'addresses');
    const n9 = { id: 'n9', api: 'http://127.0.0.1:17009', peer: 'http://127.0.0.1:17109' };
    await done(m.add(n9, { learnerOnly: true }));
    assert.deepEqual(decodeMemberContext('n9', driver.proposals.at(-1)!.context), { address: n9, promote: false });
    // the never-started n4 is removed: the next add goes through
    await done(m.remove('n4'));
    m.onConfApplied({ type: 'removeNode', nodeId: 'n4' });
    await done(m.add(n5, { learnerOnly: false }));
    assert.deepEqual(driver.conf.learners, ['n9', 'n5']);
  });

  it('a learner added as learner-only, added again without it, gets the mark (a new addLearner entry)', async () => {
    const { driver, m } = setup({ snapshotIndex: 50 });
    await done(m.add(n4, { learnerOnly: true }));
    m.onConfApplied(driver.proposals[0]!);
    assert.equal(m.promotionPending('n4'), false);
    await done(m.add(n4, { learnerOnly: true }));
    assert.equal(driver.proposals.length, 1, 'learner-only again: nothing to do');
    await done(m.add(n4, { learnerOnly: false }));
    assert.deepEqual(driver.proposals.map((p) => p.type), ['addLearner', 'addLearner']);
    m.onConfApplied(driver.proposals[1]!);
    assert.equal(m.promotionPending('n4'), true);
  });

  it('promote (explicit): waits for the learner to catch up; one that does not stays a learner (504); a retry continues', async () => {
    const { driver, m } = setup({ snapshotIndex: 50 });
    await done(m.add(n4, { learnerOnly: true }));
    await refusedWith(m.promote('n4', signal), code('timeout'));
    assert.deepEqual(driver.conf.learners, ['n4']);
    driver.setProgress('n4', 100, true, true);
    await done(m.promote('n4', signal));
    assert.deepEqual(driver.proposals.map((p) => p.type), ['addLearner', 'addVoter'], 'no second addLearner');
  });

  it('add: refuses an id with other URLs, or URLs of another member (409, marked permanent)', async () => {
    const { m } = setup({ snapshotIndex: 1 });
    await refusedWith(m.add({ id: 'n2', api: 'http://127.0.0.1:19999', peer: 'http://127.0.0.1:19998' }, { learnerOnly: true }), (e) => code('conflict')(e) && (e as Failure).details?.['conflict'] === 'addresses');
    await refusedWith(m.add({ id: 'n7', api: 'http://127.0.0.1:19999', peer: 'http://127.0.0.1:17102/' }, { learnerOnly: true }), code('conflict'));
  });

  it('one change at a time: a second one gets 409 while the first waits', async () => {
    const { m } = setup({ snapshotIndex: 1 });
    await done(m.add(n4, { learnerOnly: true }));
    const first = m.promote('n4', signal); // n4 never catches up
    await new Promise((r) => setTimeout(r, 20));
    await refusedWith(m.remove('n3'), code('conflict'));
    await refusedWith(first, code('timeout'));
  });

  it('the promotion mark survives a snapshot of the application', () => {
    const { app } = setup();
    app.promotionPending.add('n4');
    const copy = new LockApp({ maxSessions: 100, maxWaitersPerLock: 10 }, () => undefined);
    copy.restore(app.snapshot(), 1);
    assert.deepEqual([...copy.promotionPending], ['n4']);
    app.promotionPending.clear();
    copy.restore(app.snapshot(), 2);
    assert.equal(copy.promotionPending.size, 0, 'a snapshot without marks clears them');
  });

  it('a new leader\'s brief "conf change pending" is waited out; a lasting one is 409', async () => {
    const { driver, m } = setup({ snapshotIndex: 1 });
    driver.script = [{ ok: false, kind: 'rejected', reason: 'conf_change_pending' }, { ok: false, kind: 'rejected', reason: 'conf_change_pending' }];
    await done(m.remove('n3'));
    assert.deepEqual(driver.conf.voters, ['n1', 'n2']);
    driver.script = Array.from({ length: 200 }, () => ({ ok: false, kind: 'rejected', reason: 'conf_change_pending' }) as ProposalOutcome);
    await refusedWith(m.remove('n2'), code('conflict'));
  });

  it('a new leader whose term has no committed entry yet: waited out briefly, then 503 (retryable)', async () => {
    const { driver, m } = setup({ snapshotIndex: 1 });
    driver.script = [{ ok: false, kind: 'rejected', reason: 'term_not_committed' }, { ok: false, kind: 'rejected', reason: 'term_not_committed' }];
    await done(m.remove('n3'));
    assert.deepEqual(driver.conf.voters, ['n1', 'n2']);
    driver.script = Array.from({ length: 200 }, () => ({ ok: false, kind: 'rejected', reason: 'term_not_committed' }) as ProposalOutcome);
    await refusedWith(m.remove('n2'), (e) => code('unavailable')(e) && /not yet committed an entry of its term/.test((e as Error).message));
  });

  it('strict quorum check: no removal of a healthy voter while another is down', async () => {
    const { driver, m } = setup({ snapshotIndex: 1 });
    driver.term = 3; // this leader's term: n2 answers in it, n3 is down
    driver.setProgress('n2', 100, true);
    driver.setProgress('n3', 40, false);
    await refusedWith(m.remove('n2'), (e) => code('conflict')(e) && /below the quorum/.test((e as Error).message) && /not heard from lately: n3/.test((e as Error).message));
    await refusedWith(m.remove('n2'), (e) => e instanceof Failure && JSON.stringify(e.details) === JSON.stringify({ missing: ['n3'] }), 'the 409 names the missing members');
    // a voter heard from a moment ago counts even after check-quorum cleared its flag
    m.onTick();
    driver.setProgress('n2', 100, false);
    await done(m.remove('n3')); // removing the dead one is fine: 2 of 2 reachable
    assert.deepEqual(driver.conf.voters, ['n1', 'n2']);
    await refusedWith(m.remove('nope'), code('not_found'));
    await done(m.remove('n2'));
    await refusedWith(m.remove('n1'), code('invalid_request'), 'never the last voter');
  });

  it('strict quorum check: a voter heard from only in an earlier term does not count (a leader that just died)', async () => {
    const { driver, m } = setup({ snapshotIndex: 1 });
    // n3 was just elected in term 3 with n1's vote; n2 led term 2 and was heard from a
    // moment ago, but not since: it is down. The core gives every member one lease period
    // of recentActive, so the flags say nothing yet.
    driver.term = 3;
    driver.setProgress('n3', 100, true);
    driver.setProgress('n2', 100, true);
    driver.term = 4;
    driver.setProgress('n3', 100, true);
    driver.progress['n2']!.recentActive = true;
    await refusedWith(m.remove('n3'), (e) => code('conflict')(e) && JSON.stringify((e as Failure).details) === JSON.stringify({ missing: ['n2'] }));
    assert.equal(driver.proposals.length, 0, 'nothing proposed');
  });

  it('promote: unknown id 404; a voter is already done', async () => {
    const { m, driver } = setup({ snapshotIndex: 1 });
    await refusedWith(m.promote('n9', signal), code('not_found'));
    await done(m.promote('n2', signal));
    assert.equal(driver.proposals.length, 0);
  });

  it('own standing: joining until listed, then learner/voter, removed once dropped', () => {
    const { driver, m } = setup({ joining: true, self: 'n4' });
    driver.conf = { voters: ['n1', 'n2', 'n3'], learners: [] };
    assert.equal(m.selfState(), 'joining');
    assert.match(m.notReadyReason() ?? '', /joining/);
    driver.conf = { voters: ['n1', 'n2', 'n3'], learners: ['n4'] };
    m.onTick();
    assert.equal(m.selfState(), 'learner');
    assert.equal(m.notReadyReason(), null);
    driver.conf = { voters: ['n1', 'n2', 'n3', 'n4'], learners: [] };
    m.onTick();
    assert.equal(m.selfState(), 'voter');
    driver.conf = { voters: ['n1', 'n2', 'n3'], learners: [] };
    m.onTick();
    assert.equal(m.selfState(), 'removed');
    assert.match(m.notReadyReason() ?? '', /removed/);
  });

  it('a leader compacts for a learner with nothing when its log was never compacted', async () => {
    const { driver, m, setSnapshot } = setup();
    driver.setProgress('n4', 0, true, true);
    driver.setProgress('n3', 0, true); // a voter at 0: just not heard from yet
    m.onTick();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(driver.compactions, 1);
    setSnapshot(120);
    m.onTick();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(driver.compactions, 1, 'not again once a snapshot exists');
  });
});
