// The write path's event-loop turns on a real 3-node cluster (BENCHMARKS.md "Third round",
// docs/architecture.md "The write path in turns"): with RAFTLOCK_TRACE_DIR each node
// records its steps with libuv's loop iteration count (src/raft/trace.ts), so "in the same
// turn" is a count, not a timing, and holds on a loaded machine too:
//   leader:   propose → appends written to both followers BEFORE its own save is issued,
//             in the same turn;
//   follower: append decoded → save issued in the same turn; save done → ack written in
//             the same turn;
//   leader:   commit in the turn of the later of (its own save done, the first ack),
//             apply and the HTTP answer in that same turn.
// It also checks the leader hint every answer carries (docs/api.md "Leader hint").
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';

interface Step {
  step: string;
  node: string;
  index: number;
  peer: string;
  us: number;
  loop: number;
  /** position in its file (the order the process recorded) */
  seq: number;
  file: string;
}

function readSteps(dir: string): Step[] {
  const out: Step[] = [];
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.trace')) continue;
    readFileSync(join(dir, f), 'utf8').split('\n').forEach((line, seq) => {
      const [step, node, index, peer, us, loop] = line.split(' ');
      if (step && us && loop) out.push({ step, node: node!, index: Number(index), peer: peer!, us: Number(us), loop: Number(loop), seq, file: f });
    });
  }
  return out;
}

describe('the write path takes one event-loop turn per hop (real cluster, traced)', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  const dir = mkdtempSync(join(tmpdir(), 'raftlock-turns-'));
  const CYCLES = 15;

  before(async () => {
    h = await ClusterHarness.create({ nodes: 3, env: { RAFTLOCK_TRACE_DIR: dir }, session: { default_ttl_ms: 60_000 } });
    h.startAll();
  });
  after(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every answer names the leader; appends, acks, commits and answers each ride one turn', async () => {
    const leaderId = await h.waitForLeader(20_000);
    const leaderApi = h.node(leaderId).api;
    // every node's answers carry the leader hint (a follower's too, and an error's)
    for (const n of h.nodes) {
      await eventually(async () => (await h.request(n.id, 'GET', '/v1/cluster')).headers.get('x-raftlock-leader') === leaderApi, 10_000, `${n.id}'s answer to name the leader`);
      const bad = await h.request(n.id, 'POST', '/v1/locks/x/acquire', { wait_ms: -1 });
      assert.equal(bad.status, 400);
      assert.equal(bad.headers.get('x-raftlock-leader'), leaderApi, `${n.id}'s error names the leader`);
    }

    const s = await h.request(leaderId, 'POST', '/v1/sessions', {});
    assert.equal(s.status, 201, s.text);
    const sid = s.body.session_id as string;
    // A follower the leader still probes (just after the election, or after a slow first
    // answer on a loaded machine) is sent what it lacks in one batch, and the trace names
    // an append by its last entry: start the traced writes once every follower has caught up
    await eventually(async () => {
      const v = await h.view(leaderId);
      return v.members.every((m) => (m.match_index ?? -1) >= v.commit_index);
    }, 20_000, 'every follower to have caught up with the commit index');
    const firstIndex = (await h.view(leaderId)).commit_index + 1;
    for (let i = 0; i < CYCLES; i++) {
      const a = await h.request(leaderId, 'POST', '/v1/locks/turns/acquire', { session_id: sid });
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-raftlock-leader'), leaderApi);
      const r = await h.request(leaderId, 'POST', '/v1/locks/turns/release', { session_id: sid, fencing_token: a.body.fencing_token });
      assert.equal(r.status, 200, r.text);
    }
    const lastIndex = (await h.view(leaderId)).commit_index;
    assert.ok(lastIndex >= firstIndex + 2 * CYCLES - 1, `${2 * CYCLES} entries committed (${firstIndex}..${lastIndex})`);
    const followers = h.nodes.map((n) => n.id).filter((id) => id !== leaderId);

    // the nodes flush their trace every 200 ms: wait until every step of the last entry is in
    const steps = await eventually(async () => {
      const all = readSteps(dir);
      const has = (step: string, node: string): boolean => all.some((e) => e.step === step && e.node === node && e.index >= lastIndex);
      return has('apply', leaderId) && followers.every((f) => has('ack_sent', f)) && all.filter((e) => e.step === 'http_answer').length >= 2 * CYCLES ? all : undefined;
    }, 20_000, 'the trace of the last entry on every node');

    const at = (step: string, node: string, index: number, peer?: string): Step | undefined =>
      steps.find((e) => e.step === step && e.node === node && e.index === index && (peer === undefined || e.peer === peer));
    // A follower's steps are traced per message, by the message's last entry. Should an
    // entry still ride in a batch (a message lost to a reconnect sends the follower back to
    // probing), its steps are those of the first message that carried it.
    const carried = (step: string, node: string, index: number): Step | undefined =>
      at(step, node, index) ?? steps.filter((e) => e.step === step && e.node === node && e.index > index).sort((a, b) => a.seq - b.seq)[0];
    const leaderFile = at('propose', leaderId, lastIndex)!.file;
    const answers = steps.filter((e) => e.file === leaderFile && e.step === 'http_answer');
    let checked = 0;
    for (let idx = firstIndex; idx <= lastIndex; idx++) {
      const propose = at('propose', leaderId, idx);
      if (!propose) continue; // not a proposal of this node (none expected, but not ours to judge)
      checked++;
      const save = at('save_start', leaderId, idx);
      assert.ok(save, `leader's save of ${idx}`);
      for (const f of followers) {
        const sent = at('append_sent', leaderId, idx, f);
        assert.ok(sent, `append of ${idx} to ${f}`);
        assert.equal(sent.loop, propose.loop, `append of ${idx} to ${f} written in the turn it was proposed`);
        assert.ok(sent.seq < save.seq, `append of ${idx} to ${f} written before the leader's own save was issued`);
        const got = carried('recv_append', f, idx);
        const fsave = carried('save_start', f, idx);
        const saved = carried('saved', f, idx);
        const acked = carried('ack_sent', f, idx);
        assert.ok(got && fsave && saved && acked, `${f}: every step of ${idx}`);
        // in the turn the append arrived, or (the slower follower, still writing the entry
        // before) in the turn that write completed: one Ready at a time (src/raft/driver.ts)
        const freed = steps.find((e) => e.file === fsave.file && e.seq > got.seq && e.seq < fsave.seq && e.step === 'saved' && e.loop === fsave.loop);
        assert.ok(fsave.loop === got.loop || freed, `${f}: save of ${idx} issued in the turn its append arrived (${got.loop}) or its previous write completed, not in turn ${fsave.loop}`);
        assert.equal(acked.loop, saved.loop, `${f}: ack of ${idx} written in the turn its save completed`);
      }
      // the commit needs two durable copies of three: the leader's own (once its save
      // completed) or a follower's (its ack). Acks are stepped also while the leader's own
      // write is out (docs/raft-core.md "Commit during the leader's write"), so the commit
      // rides the turn in which the second of the three arrived
      const own = at('leader_saved', leaderId, idx)!;
      const acks = followers.map((f) => steps.filter((e) => e.step === 'ack_recv' && e.node === leaderId && e.peer === f && e.index >= idx).sort((a, b) => a.seq - b.seq)[0]);
      assert.ok(own && acks.some((a) => a !== undefined), `leader: own save and an ack of ${idx}`);
      const copies = [own, ...acks].filter((e): e is Step => e !== undefined).sort((a, b) => a.seq - b.seq);
      const commit = at('commit', leaderId, idx)!;
      const apply = at('apply', leaderId, idx)!;
      assert.equal(commit.loop, copies[1]!.loop, `commit of ${idx} in the turn the second of three durable copies was known (own save ${own.loop}, acks ${acks.map((a) => a?.loop).join('/')})`);
      assert.equal(apply.loop, commit.loop, `apply of ${idx} in its commit's turn`);
      // a client's request (not the lessor's own command): its answer leaves in the apply's turn
      if (!steps.some((e) => e.file === leaderFile && e.step === 'http_recv' && e.loop === propose.loop)) continue;
      const answer = answers.find((e) => e.seq > apply.seq);
      assert.ok(answer, `an HTTP answer after the apply of ${idx}`);
      assert.equal(answer.loop, apply.loop, `the answer of ${idx} handed to the socket in its apply's turn`);
    }
    assert.ok(checked >= 2 * CYCLES, `checked ${checked} entries`);
  });
});
