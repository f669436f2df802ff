// A brand-new cluster's first election waits for every voter (docs/membership.md
// "Incarnations"), and says so (docs/api.md "Readiness"). A cluster file of four voters
// with n4 never started: n1..n3 cannot elect anyone, and before this they sat at
// preCandidate, term 0, logging nothing about why. Now each of them logs every few
// seconds which voters it has not heard from, /readyz answers 503 "bootstrapping: waiting
// for n4", and `raftlock status` and the status page (GET /v1/status) show it. Once n4
// starts, the cluster forms and every node is ready.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';
import { runCli } from '../support/cluster-command.js';

describe('a four-voter cluster file with n4 not started', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  const waiting = /bootstrapping: waiting for n4\b/;

  before(async () => {
    h = await ClusterHarness.create({ nodes: 4, electionTimeoutMs: [300, 600] });
    for (const id of ['n1', 'n2', 'n3']) h.start(id);
  });
  after(async () => {
    await h?.close();
  });

  it('/readyz 503 with the reason, GET /v1/cluster not_ready, on n1..n3', async () => {
    for (const id of ['n1', 'n2', 'n3']) {
      const r = await eventually(async () => {
        const x = await h.request(id, 'GET', '/readyz').catch(() => null);
        return x && x.status === 503 && waiting.test(x.body?.error?.message ?? '') ? x : null;
      }, 30_000, `${id}'s /readyz to say it waits for n4`);
      assert.equal(r.body.error.code, 'unavailable');
      assert.match(r.body.error.message, /^not ready: bootstrapping: waiting for n4 \(a new cluster's first election needs every voter to answer\)$/);
      const v = await h.view(id);
      assert.match(v.not_ready ?? '', waiting);
      assert.equal(v.leader_id, null);
    }
  });

  it('a log line every few seconds names the voters not heard from', async () => {
    const lines = await eventually(async () => {
      const ls = h.logText('n1').split('\n').filter((l) => l.includes('first election: waiting for n4'));
      return ls.length >= 2 ? ls : null;
    }, 30_000, 'two "first election: waiting for n4" lines in n1\'s log');
    const first = JSON.parse(lines[0]!) as { level: number; waitingFor: string[]; time: number };
    const second = JSON.parse(lines[1]!) as { time: number };
    assert.deepEqual(first.waitingFor, ['n4']);
    assert.ok(first.level >= 40, 'a warning');
    const gap = second.time - first.time;
    assert.ok(gap >= 4000 && gap <= 8000, `every few seconds (${gap} ms apart)`);
  });

  it('raftlock status and the status page show "bootstrapping: waiting for n4"', async () => {
    const out = await runCli(['status', '--endpoints', h.node('n1').api], 30_000);
    assert.equal(out.code, 0, out.stderr);
    for (const id of ['n1', 'n2', 'n3']) assert.match(out.stdout, new RegExp(`^${id}: bootstrapping: waiting for n4`, 'm'));
    assert.match(out.stdout, /^leader: none/m);
    const page = await h.request('n2', 'GET', '/v1/status');
    assert.equal(page.status, 200, page.text);
    const rows = page.body.members as { id: string; not_ready?: string; role: string }[];
    for (const id of ['n1', 'n2', 'n3']) assert.match(rows.find((m) => m.id === id)?.not_ready ?? '', waiting, id);
    assert.equal(rows.find((m) => m.id === 'n4')?.role, 'unreachable');
  });

  it('n4 starts: the first election happens and every node is ready', async () => {
    h.start('n4');
    await h.waitForLeader(60_000);
    for (const id of ['n1', 'n2', 'n3', 'n4']) {
      await eventually(async () => ((await h.request(id, 'GET', '/readyz')).status === 200 ? true : null), 30_000, `${id} ready`);
      assert.equal((await h.view(id)).not_ready, undefined);
    }
  });
});
