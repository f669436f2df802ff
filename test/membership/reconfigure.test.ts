// Membership changes of a real cluster under a running acquire/release workload (docs/membership.md
// "Add a node (grow 3 → 5)", "Remove a node (shrink 5 → 3)"): grow 3 → 5 with `serve
// --join`, shrink 5 → 3 including removing the leader, replace a killed node with a new one
// (new id, empty disk), and restart every member with a cluster file that no longer
// describes the cluster (the persisted membership and addresses win). Zero failed lock
// operations other than retried 503/504, locks held throughout keep their holder and token
// on every node, and every node ends with the same lock state.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, eventually, type ClusterViewBody, type HarnessResponse } from '../support/cluster-harness.js';
import { LockWorkload } from './workload.js';

const ELECTION_MS: [number, number] = [300, 600];

describe('membership changes of a real cluster under load', { timeout: 240_000 }, () => {
  let h: ClusterHarness;
  let load: LockWorkload;
  /** current voting members, as the test changed them */
  let members: string[];
  /** locks taken at the start and held throughout, with the tokens they must keep */
  const held = new Map<string, { sid: string; token: number }>();

  /** a request retried on 503/504/connection errors against the given nodes, same key */
  async function retrying(ids: string[], method: string, path: string, body?: unknown, budgetMs = 30_000): Promise<HarnessResponse> {
    const deadline = Date.now() + budgetMs;
    const key = `mship-${Math.random().toString(36).slice(2)}`;
    let last = '';
    for (let k = 0; Date.now() < deadline; k++) {
      const id = ids[k % ids.length]!;
      try {
        const r = await h.request(id, method, path, body, method === 'GET' ? {} : { 'idempotency-key': key });
        if (r.status !== 503 && r.status !== 504) return r;
        last = `${id}: ${r.status} ${r.text.slice(0, 200)}`;
      } catch (err) {
        last = `${id}: ${(err as Error).message}`;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${method} ${path}: no definitive answer in ${budgetMs} ms (last: ${last})`);
  }

  /** every node in `ids` reports exactly `voters` as voters (no learners) and agrees on one leader */
  async function converged(ids: string[], voters: string[]): Promise<ClusterViewBody> {
    const want = [...voters].sort();
    return eventually(async () => {
      const views = await Promise.all(ids.map((id) => h.view(id)));
      const leader = views[0]!.leader_id;
      for (const v of views) {
        const got = v.members.map((m) => m.id).sort();
        if (JSON.stringify(got) !== JSON.stringify(want) || v.members.some((m) => m.role === 'learner') || v.leader_id !== leader || leader === null) return null;
      }
      return views.find((v) => v.role === 'leader') ?? null;
    }, 30_000, `${ids.join(',')} to agree on voters ${want.join(',')} and one leader`);
  }

  async function assertHeldEverywhere(ids: string[], what: string): Promise<void> {
    for (const [name, want] of held) {
      for (const id of ids) {
        const g = await h.request(id, 'GET', `/v1/locks/${name}?consistency=stale`);
        assert.equal(g.body.holder?.session_id, want.sid, `${what}: holder of ${name} on ${id}: ${g.text}`);
        assert.equal(g.body.holder?.fencing_token, want.token, `${what}: token of ${name} on ${id}`);
      }
    }
  }

  before(async () => {
    h = await ClusterHarness.create({
      nodes: 3, electionTimeoutMs: ELECTION_MS, snapshotEveryEntries: 300, session: { default_ttl_ms: 300_000 },
      extraConfig: { membership: { catch_up_timeout_ms: 4000, promote_max_lag_entries: 100 } },
    });
    h.startAll();
    members = ['n1', 'n2', 'n3'];
    await h.waitForLeader();
    for (const name of ['keep/a', 'keep/b', 'keep/c']) {
      const r = await retrying(members, 'POST', `/v1/locks/${name}/acquire`, { ttl_ms: 300_000 });
      assert.equal(r.status, 200, r.text);
      held.set(name, { sid: r.body.session_id, token: r.body.fencing_token });
    }
    load = new LockWorkload(h, members);
    load.start();
    await load.progress(10);
  });

  after(async () => {
    await load?.stop().catch(() => undefined);
    await h?.close();
  });

  it('grows 3 → 5: nodes started with --join become learners, get a snapshot, and are promoted once caught up', async () => {
    for (const id of ['n4', 'n5']) {
      const t0 = Date.now();
      await h.addNode(id, members[0]!);
      h.start(id);
      members.push(id);
      const leaderView = await converged(members, members);
      const me = leaderView.members.find((m) => m.id === id)!;
      assert.equal(me.role, 'follower');
      assert.ok((me.match_index ?? 0) > 0 && me.lag !== undefined, `match/lag of ${id}: ${JSON.stringify(me)}`);
      // its first state was the leader's snapshot, not the log replayed onto no configuration
      assert.match(h.logText(id), /installed a snapshot from the leader/);
      const ready = await eventually(async () => ((await h.request(id, 'GET', '/readyz')).status === 200 ? true : null), 10_000, `${id} ready`);
      assert.ok(ready);
      load.targets = [...members];
      await load.progress(10);
      console.log(`# ${id} joined and was promoted in ${Date.now() - t0} ms (process start included)`);
    }
    await assertHeldEverywhere(members, 'after growing to 5');
  });

  it('shrinks 5 → 3: removes a follower, then the leader itself (it hands leadership over, then leaves)', async () => {
    const before5 = await converged(members, members);
    const follower = members.find((id) => id !== before5.node_id && id !== 'n4') ?? 'n4';
    let r = await retrying(members, 'DELETE', `/v1/cluster/members/${follower}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(!r.body.members.some((m: { id: string }) => m.id === follower), `answer still lists ${follower}`);
    members = members.filter((id) => id !== follower);
    load.targets = [...members];
    await converged(members, members);
    await load.progress(10);

    const leader = (await converged(members, members)).node_id;
    const t0 = Date.now();
    r = await h.request(leader, 'DELETE', `/v1/cluster/members/${leader}`);
    assert.equal(r.status, 200, `removing the leader ${leader}: ${r.text}`);
    console.log(`# removing the leader ${leader} took ${Date.now() - t0} ms`);
    assert.ok(!r.body.members.some((m: { id: string }) => m.id === leader));
    assert.notEqual(r.body.leader_id, leader);
    members = members.filter((id) => id !== leader);
    load.targets = [...members];
    await converged(members, members);
    await load.progress(10);

    // the removed nodes say so, and stop taking part
    for (const gone of [follower, leader]) {
      const ready = await eventually(async () => {
        const x = await h.request(gone, 'GET', '/readyz');
        return x.status === 503 && /removed/.test(x.body?.error?.message ?? '') ? x : null;
      }, 10_000, `${gone} to report itself removed on /readyz`);
      assert.ok(ready.headers.get('retry-after'));
      const w = await h.request(gone, 'POST', '/v1/sessions', {});
      assert.equal(w.status, 503, `a removed node must not serve or relay writes: ${w.text}`);
      assert.match(h.logText(gone), /removed from the cluster/);
      await h.stop(gone);
    }
    await assertHeldEverywhere(members, 'after shrinking to 3');
  });

  it('replaces a killed node with a new one (new id, empty disk)', async () => {
    const leader = (await converged(members, members)).node_id;
    const victim = members.find((id) => id !== leader)!;
    await h.kill(victim);
    members = members.filter((id) => id !== victim);
    load.targets = [...members];
    await load.progress(5);
    const r = await retrying(members, 'DELETE', `/v1/cluster/members/${victim}`);
    assert.equal(r.status, 200, r.text);
    await h.addNode('n6', members[0]!);
    h.start('n6');
    members.push('n6');
    await converged(members, members);
    load.targets = [...members];
    await load.progress(10);
    await assertHeldEverywhere(members, 'after replacing a node');
  });

  it('one new voter at a time: while an added node waits for its promotion, another add gets 409', async () => {
    // a member whose process never runs: it stays a learner that never catches up, and the
    // add answers at once (the learner entry committed) with the promotion pending
    const leader = (await converged(members, members)).node_id;
    const first = await h.request(leader, 'POST', '/v1/cluster/members', { id: 'ghost', api: 'http://127.0.0.1:1', peer: 'http://127.0.0.1:2' });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.members.find((m: { id: string }) => m.id === 'ghost')?.promotion_pending, true, first.text);
    const second = await h.request(leader, 'POST', '/v1/cluster/members', { id: 'ghost2', api: 'http://127.0.0.1:3', peer: 'http://127.0.0.1:4' });
    assert.equal(second.status, 409, second.text);
    assert.equal(second.body.error.code, 'conflict');
    const v = await h.view(leader);
    assert.equal(v.members.find((m) => m.id === 'ghost')?.role, 'learner');
    const rm = await retrying(members, 'DELETE', '/v1/cluster/members/ghost');
    assert.equal(rm.status, 200, rm.text);
    await converged(members, members);
  });

  it('a full restart uses the persisted membership and addresses, not the cluster file', async () => {
    await Promise.all(members.map((id) => h.stop(id)));
    for (const id of members) h.start(id);
    const v = await converged(members, members);
    for (const m of v.members) assert.equal(m.api, h.node(m.id).api, `persisted api of ${m.id}`);
    await load.progress(10, 60_000);
    await assertHeldEverywhere(members, 'after a full restart');
  });

  it('the workload saw no failed operation, and every node holds the same lock state', async () => {
    const s = await load.stop();
    console.log(`# workload: ${s.grants} grants, ${s.checks} held-lock checks, retried: ${s.retried503}×503 ${s.retried504}×504 ${s.retriedConn}×conn`);
    load.assertClean();
    const leader = (await converged(members, members)).node_id;
    const commit = (await h.view(leader)).commit_index;
    await h.waitForApplied(commit, members);
    const states = await Promise.all(members.map(async (id) => (await h.request(id, 'GET', '/v1/locks?consistency=stale&limit=1000')).text));
    for (const s2 of states) assert.equal(s2, states[0], 'lock state differs between nodes');
    await assertHeldEverywhere(members, 'at the end');
  });
});
