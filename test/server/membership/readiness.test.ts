// What /readyz says (docs/api.md "Readiness"; src/server/membership/readiness.ts), against a scripted
// driver and clock: ready only for a member that is bound (or a learner that is caught
// up), knows a leader, and has applied what it knows to be committed — never for a node
// whose applied index stays behind a commit index it knows of for longer than the grace
// (a follower whose disk lost entries it had acknowledged: it used to answer 200 for 90 s).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { Standing, Status } from '../../../src/raft/core/types.js';
import type { RaftDriver } from '../../../src/raft/driver.js';
import type { Membership, SelfState } from '../../../src/server/membership/membership.js';
import { PeerContact } from '../../../src/server/membership/peer-contact.js';
import { Readiness } from '../../../src/server/membership/readiness.js';

const GRACE = 1000;

function setup() {
  let now = 10_000;
  const st: Status & { appliedConf: Status['conf'] } = {
    id: 'n1', role: 'follower', term: 3, vote: null, leader: 'n2', commit: 50, applied: 50, lastIndex: 50, knownCommit: 50, leaderCommit: 50,
    conf: { voters: ['n1', 'n2', 'n3'], learners: [] }, appliedConf: { voters: ['n1', 'n2', 'n3'], learners: [] }, standing: 'bound' as Standing, leadTransferee: null,
  };
  const d = { applied: 50 };
  const driver = { status: () => st, get appliedIndex() { return d.applied; } } as unknown as RaftDriver;
  const m = { self: 'voter' as SelfState, reason: null as string | null };
  const membership = { notReadyReason: () => m.reason, selfState: () => m.self } as unknown as Membership;
  const contact = new PeerContact(() => now);
  const r = new Readiness({ self: 'n1', driver: () => driver, membership, contact, nowMs: () => now, applyGraceMs: GRACE, learnerLagEntries: 100, heardWindowMs: 3000, logger: pino({ level: 'silent' }) });
  return { st, d, m, contact, r, advance: (ms: number) => (now += ms) };
}

describe('Readiness', () => {
  it('a bound follower that knows a leader and has applied its commit index is ready', () => {
    const { r } = setup();
    r.onTick();
    assert.equal(r.reason(), null);
  });

  it('applied index stuck below a commit index the leader told it: ready during the grace, then 503 naming both indexes', () => {
    const { st, d, r, advance } = setup();
    r.onTick();
    // it restarts with a log that lost its last acknowledged entries: the leader's
    // heartbeat says 52 is committed, its own log (and applied index) ends at 50
    st.knownCommit = 52;
    r.onTick();
    advance(GRACE - 1);
    r.onTick();
    assert.equal(r.reason(), null, 'a follower a few entries behind is not flagged at once');
    advance(2);
    r.onTick();
    assert.match(r.reason() ?? '', /^not caught up: applied index 50 has stayed below the commit index 52 the leader told it for 1001 ms/);
    d.applied = 52;
    r.onTick();
    assert.equal(r.reason(), null, 'ready once it has the entries');
  });

  it('a follower under load, always a little behind the newest commit but moving, stays ready', () => {
    const { st, d, r, advance } = setup();
    r.onTick(); // caught up once
    for (let k = 0; k < 50; k++) {
      st.knownCommit = 50 + 10 * (k + 1);
      d.applied = 50 + 10 * k + 5; // behind the newest, past the one before
      r.onTick();
      advance(300);
      assert.equal(r.reason(), null, `tick ${k}`);
    }
  });

  it('a node that has not yet applied what it knew at start is not ready, grace or not', () => {
    const { st, d, r } = setup();
    st.knownCommit = 80;
    d.applied = 50;
    r.onTick();
    assert.match(r.reason() ?? '', /^not caught up: applied index 50 has not reached the commit index 80/);
  });

  it('fresh, no leader: bootstrapping, naming the voters not heard from; then "every voter has answered"', () => {
    const { st, contact, r, advance } = setup();
    st.standing = 'fresh';
    st.leader = null;
    contact.note({ type: 'preVote', from: 'n2', to: 'n1', term: 1, lastIndex: 0, lastTerm: 0 });
    assert.equal(r.reason(), 'bootstrapping: waiting for n3 (a new cluster\'s first election needs every voter to answer)');
    assert.deepEqual(r.bootstrapWaitingFor(), ['n3']);
    contact.note({ type: 'preVoteResp', from: 'n3', to: 'n1', term: 1, reject: false });
    assert.equal(r.reason(), 'bootstrapping: every voter has answered; waiting for the first election');
    advance(3001);
    assert.equal(r.reason(), 'bootstrapping: waiting for n2, n3 (a new cluster\'s first election needs every voter to answer)', 'not heard from lately');
  });

  it('fresh with a leader known (a member that lost its data): not bound yet; superseded: lost its data', () => {
    const { st, r } = setup();
    st.standing = 'fresh';
    st.commit = 0;
    st.knownCommit = 0;
    assert.match(r.reason() ?? '', /^not bound to the cluster yet: this data directory is new/);
    st.standing = 'superseded';
    assert.match(r.reason() ?? '', /^this node lost its data: the cluster's configuration binds n1 to another data directory/);
  });

  it('a learner is ready once within the promotion bound of the commit index it knows of', () => {
    const { st, d, m, r } = setup();
    m.self = 'learner';
    st.standing = 'unbound';
    st.conf = { voters: ['n2', 'n3', 'n4'], learners: ['n1'] };
    st.knownCommit = 5000;
    d.applied = 4000;
    r.onTick();
    assert.match(r.reason() ?? '', /^not caught up: a learner 1000 entries behind the commit index 5000/);
    d.applied = 4950;
    r.onTick();
    d.applied = 5000;
    r.onTick();
    assert.equal(r.reason(), null);
  });

  it('membership reasons (removed, joining) come first; no leader known', () => {
    const { st, m, r } = setup();
    m.reason = 'this node is joining the cluster and is not a member yet';
    assert.equal(r.reason(), m.reason);
    m.reason = null;
    st.leader = null;
    assert.equal(r.reason(), 'no leader known');
  });
});
