// etcd's order of growing a cluster (docs/membership.md "Add a node"): `member add` first —
// sent to a FOLLOWER, while the new node is not running — then start the node with
// --join. The add answers 200 as soon as the learner entry commits (not a 504 after the
// follower's relay gave up while the leader waited for a node that does not run yet), says
// on every node that promotion is pending, and the leader promotes the node to voter by
// itself once it has caught up. The second node goes through `raftlock member add`, whose
// output says what happened and what comes next.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, eventually, type ClusterViewBody } from '../support/cluster-harness.js';
import { suiteCluster } from '../support/suite-cluster.js';
import { runCli } from '../support/cluster-command.js';

type Member = ClusterViewBody['members'][number] & { promotion_pending?: boolean };

describe('member add before the node runs, then start it: promoted to voter automatically', { timeout: 180_000 }, () => {
  let h: ClusterHarness;
  let members: string[];

  before(async () => {
    // the default catch-up timeout (60 s) is what made the old add hold the request
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, 600] });
    h.startAll();
    members = ['n1', 'n2', 'n3'];
    await h.waitForLeader();
  });
  after(async () => {
    await h?.close();
  });

  const follower = async (): Promise<string> => {
    const l = await h.waitForLeader(10_000, members);
    return members.find((id) => id !== l)!;
  };
  const memberOf = (v: ClusterViewBody, id: string): Member | undefined => v.members.find((m) => m.id === id) as Member | undefined;

  /** every node in `ids` lists `id` as a voter, with no promotion pending */
  async function voterEverywhere(ids: string[], id: string): Promise<void> {
    await eventually(async () => {
      const views = await Promise.all(ids.map((x) => h.view(x)));
      return views.every((v) => {
        const m = memberOf(v, id);
        return m && (m.role === 'follower' || m.role === 'leader') && m.promotion_pending === undefined;
      });
    }, 30_000, `${ids.join(',')} to list ${id} as a voter`);
  }

  it('POST /v1/cluster/members via a follower before the node runs: 200 at once, learner with promotion pending on every node', async () => {
    const via = await follower();
    const n4 = await h.addNode('n4', via);
    const t0 = Date.now();
    const r = await h.request(via, 'POST', '/v1/cluster/members', { id: 'n4', api: n4.api, peer: n4.peer });
    const ms = Date.now() - t0;
    console.log(`# member add via follower ${via} answered ${r.status} in ${ms} ms (node not running)`);
    assert.equal(r.status, 200, r.text);
    const me = memberOf(r.body, 'n4');
    assert.equal(me?.role, 'learner', r.text);
    assert.equal(me?.promotion_pending, true, r.text);
    // well inside the old relay's 5 s give-up, and far from the 60 s catch-up timeout
    assert.ok(ms < 5000, `answered after ${ms} ms`);
    await eventually(async () => {
      const views = await Promise.all(members.map((id) => h.view(id)));
      return views.every((v) => memberOf(v, 'n4')?.role === 'learner' && memberOf(v, 'n4')?.promotion_pending === true);
    }, 10_000, 'every member to list n4 as a learner with promotion pending');
    // the same request again (a retry, or the node's own join) finds it: 200, nothing new
    const again = await h.request(via, 'POST', '/v1/cluster/members', { id: 'n4', api: n4.api, peer: n4.peer });
    assert.equal(again.status, 200, again.text);
    // one new voter at a time: another add waits until n4 is promoted (or removed)
    const other = await h.request(via, 'POST', '/v1/cluster/members', { id: 'n8', api: 'http://127.0.0.1:1', peer: 'http://127.0.0.1:2' });
    assert.equal(other.status, 409, other.text);
    assert.match(other.body.error.message, /n4 was added and waits to be promoted/);
  });

  it('then start it (serve --join): it catches up and is promoted to voter with no further request', async () => {
    const t0 = Date.now();
    h.start('n4');
    members.push('n4');
    await voterEverywhere(members, 'n4');
    console.log(`# n4 promoted ${Date.now() - t0} ms after h.start (process start-up included)`);
    assert.match(h.logText('n4'), /installed a snapshot from the leader/);
    await eventually(async () => ((await h.request('n4', 'GET', '/readyz')).status === 200 ? true : null), 10_000, 'n4 ready');
    // a write through the new voter works
    const w = await h.request('n4', 'POST', '/v1/locks/grown/acquire', {});
    assert.equal(w.status, 200, w.text);
  });

  it('raftlock member add (CLI, via a follower) says what happened and what comes next; the node started after it becomes a voter', async () => {
    const via = await follower();
    const n5 = await h.addNode('n5', via);
    const out = await runCli(['member', 'add', 'n5', '--api', n5.api, '--peer', n5.peer, '--endpoints', h.node(via).api, '--config', h.configPath], 60_000);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^added n5 as a learner$/m);
    assert.match(out.stdout, new RegExp(`raftlock serve --config \\S+ --node n5 --api ${n5.api} --peer ${n5.peer} --join ${h.node(via).api}`));
    assert.match(out.stdout, /promoted to voter automatically once it has caught up/);
    assert.match(out.stdout, /n5\s+learner \(promotion pending\)/);
    h.start('n5');
    members.push('n5');
    await voterEverywhere(members, 'n5');
    const list = await runCli(['member', 'list', '--endpoints', h.node(via).api], 60_000);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^n5\s+(follower|leader)\s/m);
  });
});

// The same order without --join (docs/membership.md "Add a node"): the node is listed in
// the cluster file, added with POST /v1/cluster/members, then started with plain
// `serve --config FILE --node n4` on an empty data directory. Its start-up check asks the
// running cluster and finds n4 a learner that no leader has bound yet — which counts in no
// quorum and may start empty — so it starts as a node that joins, instead of refusing as a
// member that lost its data (which it did before: exit 2, "has lost its data").
describe('member add, then serve --config FILE --node n4 (FILE lists n4, no --join): promoted to voter', { timeout: 180_000 }, () => {
  const cluster = suiteCluster({ nodes: 3, electionTimeoutMs: [300, 600] });

  it('catches up from the leader\'s snapshot and is promoted; /readyz 200 once it is', async () => {
    const h = cluster();
    const lock = await h.request('n1', 'POST', '/v1/locks/before-n4/acquire', {});
    assert.equal(lock.status, 200, lock.text);
    const n4 = await h.addToFile('n4');
    const r = await h.request('n1', 'POST', '/v1/cluster/members', { id: 'n4', api: n4.api, peer: n4.peer });
    assert.equal(r.status, 200, r.text);
    h.start('n4');
    const members = ['n1', 'n2', 'n3', 'n4'];
    await eventually(async () => {
      const views = await Promise.all(members.map((id) => h.view(id)));
      return views.every((v) => {
        const m = v.members.find((x) => x.id === 'n4') as Member | undefined;
        return m && (m.role === 'follower' || m.role === 'leader') && m.promotion_pending === undefined;
      });
    }, 60_000, `every member to list n4 as a voter (n4 ${h.node('n4').lastExit ? `exited ${JSON.stringify(h.node('n4').lastExit)}: ${h.logText('n4').slice(-600)}` : 'runs'})`);
    assert.equal(h.node('n4').lastExit, null, 'n4 still runs');
    const log = h.logText('n4');
    assert.doesNotMatch(log, /has lost its data/);
    assert.match(log, /added to the running cluster as a learner and starts empty/);
    assert.match(log, /installed a snapshot from the leader/);
    await eventually(async () => ((await h.request('n4', 'GET', '/readyz')).status === 200 ? true : null), 20_000, 'n4 ready');
    const held = await h.request('n4', 'GET', '/v1/locks/before-n4?consistency=stale');
    assert.equal(held.status, 200, held.text);
    assert.equal(held.body.held, true, 'n4 has the state from before it joined');
    const w = await h.request('n4', 'POST', '/v1/locks/via-n4/acquire', {});
    assert.equal(w.status, 200, w.text);
  });

  it('an id the running cluster does not list is refused with one line saying to add it first', async () => {
    const h = cluster();
    await h.addToFile('n5'); // in the file, never added
    h.start('n5');
    const code = await h.waitForExit('n5', 60_000);
    assert.equal(code, 2);
    const line = h.logText('n5').split('\n').find((l) => l.startsWith('raftlock: node n5 is not a member'));
    assert.ok(line, h.logText('n5').slice(-1000));
    assert.match(line, /raftlock member add n5/);
    assert.match(line, /--join/);
  });
});
