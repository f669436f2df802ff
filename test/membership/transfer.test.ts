// Leadership transfer of a real cluster under a running acquire/release workload (issue
// 9): to each follower in turn (REST), to the most up-to-date follower by default, and
// through the CLI (`raftlock transfer-leader --to`, `raftlock member list --json`); bad
// targets are refused with 400. Zero failed lock operations other than retried 503/504.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ClusterHarness, binPath } from '../support/cluster-harness.js';
import { LockWorkload } from './workload.js';

describe('leadership transfer of a real cluster under load', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  let load: LockWorkload;
  const ids = ['n1', 'n2', 'n3'];

  function cli(args: string[]): { code: number | null; stdout: string; stderr: string } {
    const r = spawnSync(process.execPath, [binPath, ...args, '--endpoints', h.endpoints.join(',')], { encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, 600], session: { default_ttl_ms: 300_000 } });
    h.startAll();
    await h.waitForLeader();
    load = new LockWorkload(h, ids);
    load.start();
    await load.progress(10);
  });

  after(async () => {
    await load?.stop().catch(() => undefined);
    await h?.close();
  });

  it('moves leadership to each follower in turn, through any node', async () => {
    for (let round = 0; round < 2; round++) {
      const leader = await h.waitForLeader(10_000);
      for (const to of ids.filter((x) => x !== leader)) {
        const via = ids.find((x) => x !== to)!; // through the old leader or another follower
        const t0 = Date.now();
        const r = await h.request(via, 'POST', '/v1/cluster/transfer-leadership', { to });
        assert.equal(r.status, 200, `transfer to ${to} via ${via}: ${r.text}`);
        assert.equal(r.body.leader_id, to);
        assert.equal(await h.waitForLeader(10_000), to);
        console.log(`# transfer to ${to} took ${Date.now() - t0} ms`);
        await load.progress(5);
      }
    }
  });

  it('without "to" picks an up-to-date follower', async () => {
    const leader = await h.waitForLeader(10_000);
    const r = await h.request(leader, 'POST', '/v1/cluster/transfer-leadership', {});
    assert.equal(r.status, 200, r.text);
    assert.notEqual(r.body.leader_id, leader);
    assert.equal(await h.waitForLeader(10_000), r.body.leader_id);
    await load.progress(5);
  });

  it('refuses a target that is not a voting member', async () => {
    const r = await h.request('n1', 'POST', '/v1/cluster/transfer-leadership', { to: 'nope' });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'invalid_request');
    assert.match(r.body.error.message, /not a voting member/);
    const bad = await h.request('n1', 'POST', '/v1/cluster/transfer-leadership', { to: '../x' });
    assert.equal(bad.status, 400, bad.text);
  });

  it('CLI: transfer-leader --to and member list', async () => {
    const leader = await h.waitForLeader(10_000);
    const to = ids.find((x) => x !== leader)!;
    const t = cli(['transfer-leader', '--to', to]);
    assert.equal(t.code, 0, t.stderr);
    assert.match(t.stdout, new RegExp(`leader is now ${to}`));
    assert.equal(await h.waitForLeader(10_000), to);
    const l = cli(['member', 'list', '--json']);
    assert.equal(l.code, 0, l.stderr);
    const v = JSON.parse(l.stdout) as { leaderId: string; members: { id: string; role: string; matchIndex?: number; lag?: number }[] };
    assert.equal(v.leaderId, to);
    assert.deepEqual(v.members.map((m) => m.id).sort(), ids);
    for (const m of v.members) {
      assert.equal(m.role, m.id === to ? 'leader' : 'follower');
      assert.equal(typeof m.matchIndex, 'number', 'member list asks the leader, which knows match indexes');
      assert.equal(typeof m.lag, 'number');
    }
    const table = cli(['member', 'list']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /ID\s+ROLE\s+MATCH\s+LAG\s+API\s+PEER/);
    const bad = cli(['member', 'remove', 'nobody']);
    assert.equal(bad.code, 2, `${bad.stdout}${bad.stderr}`);
    assert.match(bad.stderr, /not a member/);
    await load.progress(5);
  });

  it('the workload saw no failed operation', async () => {
    const s = await load.stop();
    console.log(`# workload: ${s.grants} grants, ${s.checks} held-lock checks, retried: ${s.retried503}×503 ${s.retried504}×504 ${s.retriedConn}×conn`);
    load.assertClean();
  });
});
