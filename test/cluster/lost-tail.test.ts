// A follower whose disk lost its last acknowledged entry (docs/raft-core.md "A follower
// whose log went backwards"; docs/recovery.md "A damaged data directory"), reproduced as
// an operator would: kill -9 a follower right after the leader shows it acknowledged
// everything, cut 7 bytes off its newest LevelDB .log (the last record is torn; LevelDB
// drops it on recovery without a word), restart it. It comes back holding less than it
// acknowledged. Before, the leader kept its old match: the follower's applied index sat
// behind for as long as the cluster stayed quiet (until the leader's next compaction,
// up to 10,000 entries later), /readyz answered 200, and nobody logged anything. Now the
// leader hears it at the next heartbeat, logs it, counts it, and sends the entries.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';

describe('a follower whose newest LevelDB record was torn', { timeout: 120_000 }, () => {
  let h: ClusterHarness;

  before(async () => {
    // long sessions: nothing expires, so the cluster stays quiet after the writes
    h = await ClusterHarness.create({ nodes: 3, electionTimeoutMs: [300, 600], session: { default_ttl_ms: 300_000 } });
    h.startAll();
  });
  after(async () => {
    await h?.close();
  });

  it('is noticed at once by the leader (log line, metric), gets the entries back, and is ready only then', async () => {
    const leader = await h.waitForLeader();
    const victim = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;
    for (let k = 0; k < 20; k++) {
      const r = await h.request(leader, 'POST', `/v1/locks/tail-${k}/acquire`, {});
      assert.equal(r.status, 200, r.text);
    }
    // the leader shows the victim acknowledged everything: then kill -9 it at once
    const acked = await eventually(async () => {
      const v = await h.view(leader);
      const m = v.members.find((x) => x.id === victim);
      return m?.lag === 0 && m.match_index !== undefined && m.match_index > 0 ? m.match_index : null;
    }, 10_000, `${leader} to show ${victim} acknowledged everything`);
    await h.kill(victim);
    const dir = join(h.dir, 'data', victim);
    const newest = readdirSync(dir).filter((f) => /^\d+\.log$/.test(f)).sort().at(-1)!;
    const size = statSync(join(dir, newest)).size;
    truncateSync(join(dir, newest), size - 7);
    const before = h.logText(victim).length;
    h.start(victim);
    const loaded = await eventually(async () => {
      const line = h.logText(victim).slice(before).split('\n').find((l) => l.includes('"storage loaded"'));
      return line ? (JSON.parse(line) as { lastIndex: number }) : null;
    }, 30_000, `${victim} to load its storage`);
    assert.ok(loaded.lastIndex < acked, `the torn record held acknowledged entries: loaded ${loaded.lastIndex}, acknowledged ${acked}`);
    // the leader says so, and counts it
    const line = await eventually(async () => h.logText(leader).split('\n').find((l) => l.includes(`the log of ${victim} went backwards`)) ?? null, 20_000, `${leader} to log that ${victim}'s log went backwards`);
    const entry = JSON.parse(line) as { level: number; follower: string; acknowledged: number; logEndsAt: number };
    assert.ok(entry.level >= 50, 'error level');
    assert.equal(entry.follower, victim);
    assert.equal(entry.acknowledged, acked);
    assert.equal(entry.logEndsAt, loaded.lastIndex);
    const metrics = await h.request(leader, 'GET', '/metrics');
    assert.match(metrics.text, /^raftlock_raft_follower_log_regressions_total 1$/m);
    // the entries come back at once, on a quiet cluster; ready only once it has them
    const target = (await h.view(leader)).commit_index;
    await eventually(async () => (await h.view(victim)).applied_index >= target, 10_000, `${victim} to apply through ${target}`);
    await eventually(async () => ((await h.request(victim, 'GET', '/readyz')).status === 200 ? true : null), 10_000, `${victim} ready`);
    const m = (await h.view(leader)).members.find((x) => x.id === victim)!;
    assert.equal(m.lag, 0);
  });
});
