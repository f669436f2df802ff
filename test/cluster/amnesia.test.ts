// A node whose data directory is gone never rejoins as the voter it was (docs/membership.md,
// "A node whose data directory is gone"), on real processes: a brand-new cluster of blank
// directories still bootstraps; a member restarted on an empty directory without --join
// while its peers form a cluster exits non-zero with one line saying what to do; and the
// documented recovery (member remove → wipe → serve --join, same id) brings it back as a
// voter with every acknowledged lock intact.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ClusterHarness, delay, eventually, type ClusterViewBody } from '../support/cluster-harness.js';

describe('a wiped member on real processes', { timeout: 180_000 }, () => {
  let h: ClusterHarness;

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, 600], session: { default_ttl_ms: 300_000 } });
  });
  after(async () => {
    await h?.close();
  });

  it('a brand-new cluster (every data directory empty) bootstraps', async () => {
    h.startAll();
    await h.waitForLeader(60_000);
  });

  it('an empty-dir node exits non-zero with one line while its peers form a cluster', async () => {
    const lock = await retrying(() => h.request('n1', 'POST', '/v1/locks/amnesia%2Fx/acquire', { ttl_ms: 300_000 }));
    assert.equal(lock.status, 200, lock.text);
    await h.kill('n3');
    await rm(join(h.dir, 'data', 'n3'), { recursive: true, force: true });
    const logBefore = (await readFile(join(h.dir, 'n3.log'), 'utf8')).length;
    const started = Date.now();
    h.start('n3');
    const exit = await eventually(async () => h.node('n3').lastExit, 60_000, 'the wiped n3 to exit');
    const secs = (Date.now() - started) / 1000;
    assert.equal(exit.code, 2, `exit ${JSON.stringify(exit)}`);
    const out = (await readFile(join(h.dir, 'n3.log'), 'utf8')).slice(logBefore);
    const line = out.split('\n').find((l) => l.startsWith('raftlock: node n3 has lost its data'));
    assert.ok(line, `no one-line explanation in:\n${out.slice(-2000)}`);
    assert.match(line, /raftlock member remove n3/);
    assert.match(line, /wipe /);
    assert.match(line, /raftlock serve --join/);
    console.log(`wiped n3 refused to start in ${secs.toFixed(1)} s: ${line}`);
  });

  it('remove → wipe → join brings it back as a voter under the same id, nothing lost', async () => {
    const removed = await retrying(() => h.request('n1', 'DELETE', '/v1/cluster/members/n3'));
    assert.equal(removed.status, 200, removed.text);
    await rm(join(h.dir, 'data', 'n3'), { recursive: true, force: true });
    h.node('n3').joinVia = h.node('n1').api;
    h.start('n3');
    await eventually(async () => {
      const v: ClusterViewBody = await h.view('n1');
      return v.members.some((m) => m.id === 'n3' && m.role !== 'learner') ? v : null;
    }, 90_000, 'n3 to be a voter again');
    const g = await eventually(async () => {
      const r = await h.request('n3', 'GET', '/v1/locks/amnesia%2Fx?consistency=stale');
      return r.status === 200 && r.body.holder ? r : null;
    }, 30_000, 'n3 to hold the lock state');
    assert.ok(g.body.holder.fencing_token > 0);
  });

  async function retrying<T extends { status: number }>(f: () => Promise<T>): Promise<T> {
    return eventually(async () => {
      try {
        const r = await f();
        return r.status === 503 || r.status === 504 ? null : r;
      } catch {
        return null;
      }
    }, 30_000, 'a definitive answer');
  }
});

describe('a brand-new cluster with one node started late', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  after(async () => {
    await h?.close();
  });

  it('bootstraps once the late node is up (the first election needs every voter)', async () => {
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, 600] });
    h.start('n1');
    h.start('n2');
    // the scenario itself: a node that comes up a couple of seconds after the others
    await new Promise((r) => setTimeout(r, 2000));
    h.start('n3');
    await h.waitForLeader(60_000);
    for (const id of ['n1', 'n2', 'n3']) assert.equal(h.node(id).lastExit, null, `${id} still runs`);
  });
});

// docs/api.md "Readiness": a node that is not bound to the cluster never says it is ready.
// A member restarted on an empty directory while its peers were out of reach (so its
// start-up check heard nothing) used to answer /readyz 200 {"status":"ready"} — role
// follower, leader named — for over a second, until the leader's log told it that it lost
// its data and it exited 2.
describe('a wiped member whose peers were briefly out of reach', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  after(async () => {
    await h?.close();
  });

  it('never answers /readyz 200: 503 with a not-bound reason until it exits 2', async () => {
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, 600] });
    h.startAll();
    const leader = await h.waitForLeader(60_000);
    const victim = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;
    const peers = ['n1', 'n2', 'n3'].filter((id) => id !== victim);
    const w = await h.request(leader, 'POST', '/v1/locks/wiped%2Fx/acquire', {});
    assert.equal(w.status, 200, w.text);
    await h.kill(victim);
    await rm(join(h.dir, 'data', victim), { recursive: true, force: true });
    for (const id of peers) h.pause(id); // its start-up check (2 s per peer) hears nothing
    const logBefore = h.logText(victim).length;
    h.start(victim);
    const answers: { status: number; message: string }[] = [];
    let resumed = false;
    const deadline = Date.now() + 60_000;
    while (h.node(victim).proc && Date.now() < deadline) {
      const r = await h.request(victim, 'GET', '/readyz').catch(() => null);
      if (r) {
        answers.push({ status: r.status, message: r.body?.error?.message ?? r.text });
        if (!resumed) {
          // it serves: its check is over; the peers come back, and the leader reaches it
          for (const id of peers) h.resume(id);
          resumed = true;
        }
      }
      await delay(20);
    }
    const exit = await h.waitForExit(victim, 30_000);
    console.log(`# ${victim} answered /readyz ${answers.length} times before it exited: ${[...new Set(answers.map((a) => `${a.status} ${a.message.slice(0, 60)}`))].join(' | ')}`);
    assert.equal(exit, 2, `exit ${String(exit)}; ${h.logText(victim).slice(logBefore).slice(-1500)}`);
    assert.ok(answers.length > 0, 'it served /readyz before it exited');
    assert.deepEqual(answers.filter((a) => a.status === 200), [], 'never 200');
    // every 503 says why, in one of the reasons of a node that is not bound (docs/api.md
    // "Readiness"): which one it is when a probe lands depends on what it has heard yet —
    // nobody (a first election's wait), a leader (not bound), or the leader's log (lost data)
    const notBound = /^not ready: (not bound to the cluster yet|bootstrapping: |this node lost its data)/;
    assert.deepEqual(answers.filter((a) => !notBound.test(a.message)), [], 'every 503 names a not-bound reason');
    assert.match(h.logText(victim).slice(logBefore), /has lost its data/);
  });
});
