// An id reused after its removal, as the docs allow (docs/membership.md "Replace a failed
// node"): `removeNode n2` commits; n2's disk is wiped; POST /v1/cluster/members n2 answers
// 200; the other nodes are killed and restart; n2 starts with --join. The new leader ships
// its newest snapshot, taken BEFORE the removal: it still binds n2 to its old data
// directory. The removeNode and addLearner entries follow it in the leader's log — here
// behind thousands of other entries, so that n2 holds the snapshot alone for a while.
// Before, the fresh n2 installed the snapshot, logged "this node is now a voter" and
// exited 2 "has lost its data (the cluster's configuration binds n2 to another data
// directory)", leaving a learner with promotion pending behind. The amnesia decision now
// rests on the configuration n2 has once it holds its leader's log (SupersededWatch).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';

/** entries written between the snapshot and the removal */
const TAIL = 4000;

describe('an id removed, wiped and added again, behind an old snapshot that binds its old directory', { timeout: 240_000 }, () => {
  let h: ClusterHarness;

  before(async () => {
    // every node compacts early, then (restarted with a larger interval) never again
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, 600], snapshotEveryEntries: 20, session: { default_ttl_ms: 300_000 } });
    h.startAll();
  });
  after(async () => {
    await h?.close();
  });

  function setSnapshotInterval(n: number): void {
    const c = JSON.parse(readFileSync(h.configPath, 'utf8')) as Record<string, unknown>;
    c['snapshot_every_entries'] = n;
    writeFileSync(h.configPath, JSON.stringify(c, null, 2));
  }

  /** `count` acquires of fresh locks, 16 at a time; one that meets a leader change is
   *  retried (an acquire of a free lock by a new session is safe to repeat here) */
  async function write(via: string, from: number, count: number): Promise<void> {
    let next = from;
    const worker = async (): Promise<void> => {
      while (next < from + count) {
        const k = next++;
        const r = await eventually(async () => {
          const x = await h.request(via, 'POST', `/v1/locks/reuse-${k}/acquire`, {}).catch(() => null);
          return x && x.status !== 503 && x.status !== 504 ? x : null;
        }, 30_000, `acquire reuse-${k}`);
        assert.equal(r.status, 200, r.text);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
  }

  it('n2 takes the old snapshot, then the removal and its re-addition: it stays, catches up and is promoted', async () => {
    let leader = await h.waitForLeader();
    await write(leader, 0, 30);
    await h.waitForApplied((await h.view(leader)).commit_index);
    // every node compacted (checked below, as each reloads its storage)
    for (const id of ['n1', 'n2', 'n3']) await h.stop(id);
    setSnapshotInterval(1_000_000);
    h.startAll();
    leader = await h.waitForLeader();
    for (const id of ['n1', 'n2', 'n3']) {
      const loaded = JSON.parse(h.logText(id).split('\n').filter((l) => l.includes('"storage loaded"')).at(-1)!) as { snapshotIndex: number };
      assert.ok(loaded.snapshotIndex > 0, `${id} restarted from a snapshot (${JSON.stringify(loaded)})`);
    }
    await write(leader, 1000, TAIL);
    // remove n2 (asked of n1 or n3; a removal of the leader hands leadership over first,
    // and a relayed request that meets that answers 503: retried), wipe it, add it again
    // while it is down
    const removed = await eventually(async () => {
      const r = await h.request(leader === 'n1' ? 'n1' : 'n3', 'DELETE', '/v1/cluster/members/n2').catch(() => null);
      return r && r.status !== 503 && r.status !== 504 ? r : null;
    }, 30_000, 'the removal of n2');
    assert.ok(removed.status === 200 || removed.status === 404, removed.text);
    await eventually(async () => ((await h.view('n1')).members.some((m) => m.id === 'n2') ? null : true), 10_000, 'n1 to apply the removal of n2');
    await h.kill('n2');
    await rm(join(h.dir, 'data', 'n2'), { recursive: true, force: true });
    const n2 = h.node('n2');
    const added = await h.request('n1', 'POST', '/v1/cluster/members', { id: 'n2', api: n2.api, peer: n2.peer });
    assert.equal(added.status, 200, added.text);
    // both others are killed and restart: the new leader ships its pre-removal snapshot
    await h.kill('n1');
    await h.kill('n3');
    h.start('n1');
    h.start('n3');
    await h.waitForLeader(60_000, ['n1', 'n3']);
    n2.joinVia = h.node('n1').api;
    const logBefore = h.logText('n2').length;
    h.start('n2');
    const promoted = await eventually(async () => {
      if (!h.node('n2').proc) return 'exited';
      const views = await Promise.all(['n1', 'n3'].map((id) => h.view(id)));
      return views.every((v) => v.members.some((m) => m.id === 'n2' && (m.role === 'follower' || m.role === 'leader'))) ? 'voter' : null;
    }, 90_000, 'n2 to be promoted to voter');
    assert.equal(promoted, 'voter', `n2 exited ${JSON.stringify(h.node('n2').lastExit)}: ${h.logText('n2').slice(logBefore).slice(-800)}`);
    const log = h.logText('n2').slice(logBefore);
    assert.match(log, /installed a snapshot from the leader/);
    assert.doesNotMatch(log, /has lost its data/);
    await eventually(async () => ((await h.request('n2', 'GET', '/readyz')).status === 200 ? true : null), 20_000, 'n2 ready');
    assert.equal(h.node('n2').lastExit, null, 'n2 runs');
  });
});
