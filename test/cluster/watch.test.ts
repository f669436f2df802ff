// The watch feed of a real 3-node cluster against its applied log (docs/contract.md §4
// "Watch"): a stream on every node and an SDK watcher, through a workload with a leader
// kill in the middle. Afterwards every node's log is replayed through the state machine and
// the one FsmEvent→watch mapping: each stream must be exactly that sequence (log order, no
// gap, no duplicate) from the index it opened at — the killed node's up to its death — and
// the SDK's, which started on the node that is killed, must be too, across the failover.
// The killed node, restarted, rebuilds its window from its log: a resume from before the
// kill gets the same events.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RaftlockClient, type WatchEvent, type WatchSynced } from '@raftlock/client';
import { LockApp } from '../../src/server/app/lock-app.js';
import type { ApplyOutput } from '../../src/lock-fsm/index.js';
import { LevelStorage } from '../../src/raft/storage/level-storage.js';
import { watchEventsOfEntry } from '../../src/server/watch/watch-events.js';
import { ClusterHarness, eventually } from '../support/cluster-harness.js';
import { openSse, sseFrames, type SseStream } from '../support/sse.js';

/** "index event name session token" — one line per event, comparable across sources */
type Line = string;
const line = (index: number, event: string, d: { name?: unknown; session_id?: unknown; fencing_token?: unknown; reason?: unknown }): Line =>
  `${index} ${event} ${String(d.name)} ${String(d.session_id ?? '-')} ${String(d.fencing_token ?? '-')} ${String(d.reason ?? '-')}`;

async function replayLog(dir: string): Promise<Line[]> {
  const st = await LevelStorage.open(dir, { seedConf: { voters: ['ignored'], learners: [] } });
  try {
    assert.equal(st.snapshot().meta.index, 0, 'no snapshot in this short run');
    const app = new LockApp({}, () => undefined);
    const out: Line[] = [];
    const commit = st.hardState().commit;
    for (const e of st.entries(1, Math.min(commit, st.lastIndex()) + 1)) {
      if (e.kind !== 'normal') continue;
      const r = app.apply(e) as ApplyOutput;
      for (const w of watchEventsOfEntry(r.events, e.index)) out.push(line(e.index, w.event, w.data));
    }
    return out;
  } finally {
    await st.close();
  }
}

function streamLines(s: SseStream): { openedAt: number; lines: Line[] } {
  const frames = sseFrames(s.text());
  const marker = frames.find((f) => f.event === undefined && f.id !== undefined);
  assert.ok(marker, 'the stream opened with its id-only marker');
  const lines = frames.filter((f) => f.event !== undefined && f.event !== 'state').map((f) => {
    assert.equal(f.id, String(f.data!.index), 'id is the log index');
    return line(Number(f.id), f.event!, f.data!);
  });
  return { openedAt: Number(marker.id), lines };
}

describe('watch: every node streams its applied log', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  const streams = new Map<string, SseStream>();
  const ac = new AbortController();
  let client: RaftlockClient | undefined;
  // also on failure: a watcher left running would retry for ever and keep the process alive
  after(async () => {
    ac.abort();
    for (const s of streams.values()) s.close();
    await client?.close();
    await h?.close();
  });

  it('streams equal the replayed log on every node, across a leader kill; the SDK resumes with no gap or duplicate', async () => {
    h = await ClusterHarness.create({ nodes: 3, session: { default_ttl_ms: 60_000 } });
    h.startAll();
    // generous: on a loaded machine a node process can take tens of seconds to start
    const leader = await h.waitForLeader(90_000);
    for (const n of h.nodes) streams.set(n.id, await openSse(`${n.api}/v1/watch`));
    for (const s of streams.values()) await s.until(/id: \d+\n\n/);

    // the SDK starts on the node that is killed (random 0: the first endpoint first)
    const victim = h.node(leader);
    client = new RaftlockClient({ endpoints: [victim.api, ...h.nodes.filter((n) => n.id !== leader).map((n) => n.api)], random: () => 0, timeoutMs: 2000 });
    const seen: (WatchEvent | WatchSynced)[] = [];
    const sdkDone = (async () => {
      try {
        for await (const e of client.watch('', { signal: ac.signal, idleTimeoutMs: 3000 })) seen.push(e);
      } catch (err) {
        if (!ac.signal.aborted) throw err;
      }
    })();
    await eventually(async () => seen.some((e) => e.event === 'synced'), 5000, 'the SDK watch to open');

    const post = async (via: string, path: string, body: unknown, method = 'POST'): Promise<Record<string, unknown>> => {
      const r = await h.request(via, method, path, body);
      assert.ok(r.status === 200 || r.status === 201, `${method} ${path} via ${via}: ${r.status} ${r.text}`);
      return r.body as Record<string, unknown>;
    };
    // before the kill: exclusive handover through a queue, shared grants, a semaphore, a resize, a session end
    const s1 = (await post(leader, '/v1/sessions', {})).session_id as string;
    const s2 = (await post(leader, '/v1/sessions', {})).session_id as string;
    await post(leader, '/v1/locks/w/a/acquire', { session_id: s1 });
    const waiting = h.request(leader, 'POST', '/v1/locks/w/a/acquire', { session_id: s2, wait_ms: 20_000 });
    await streams.get(leader)!.until('event: waiting');
    await post(leader, '/v1/locks/w/a/release', { session_id: s1 });
    assert.equal((await waiting).status, 200);
    await post(leader, '/v1/locks/w/r/acquire', { session_id: s1, mode: 'shared' });
    await post(leader, '/v1/locks/w/r/acquire', { session_id: s2, mode: 'shared' });
    await post(leader, '/v1/semaphores/w/s/acquire', { session_id: s1, limit: 2, permits: 2 });
    await post(leader, '/v1/semaphores/w/s/limit', { limit: 3 }, 'PUT');
    await post(leader, `/v1/sessions/${s2}`, undefined, 'DELETE');
    await eventually(async () => seen.some((e) => e.event === 'released' && e.reason === 'session_closed'), 5000, 'the SDK to see the session end');
    await h.kill(leader);
    const next = await h.waitForLeader(20_000, h.nodes.map((n) => n.id).filter((id) => id !== leader));
    const s3 = (await post(next, '/v1/sessions', {})).session_id as string;
    await post(next, '/v1/locks/w/b/acquire', { session_id: s3 });
    await post(next, '/v1/locks/w/b/release', { session_id: s3 });
    await post(next, '/v1/semaphores/w/s/release', { session_id: s1 });
    await post(next, '/v1/locks/zz/end/acquire', { session_id: s3 });
    const survivors = h.nodes.map((n) => n.id).filter((id) => id !== leader);
    for (const id of survivors) await streams.get(id)!.until('"name":"zz/end"', 10_000);
    await eventually(async () => seen.some((e) => e.event === 'acquired' && e.name === 'zz/end'), 15_000, 'the SDK to see the last event after failing over');
    // the killed node restarts: it rebuilds its window from the log it replays, and a
    // resume from before the kill is served from it
    h.start(leader);
    const commit = (await h.view(next)).commit_index;
    await h.waitForApplied(commit, [leader], 60_000);
    const opened = streamLines(streams.get(survivors[0]!)!).openedAt;
    const resumed = await openSse(`${victim.api}/v1/watch?from_index=${opened}`);
    streams.set(`${leader}-restarted`, resumed);
    await resumed.until('"name":"zz/end"', 10_000);
    ac.abort();
    await sdkDone;
    for (const s of streams.values()) s.close();
    for (const id of survivors) await h.stop(id);
    await h.stop(leader);

    // the applied log, replayed: both survivors agree, and each stream is that log
    const logs = new Map<string, Line[]>();
    for (const n of h.nodes) logs.set(n.id, await replayLog(join(h.dir, 'data', n.id)));
    const full = logs.get(survivors[0]!)!;
    assert.deepEqual(logs.get(survivors[1]!), full, 'survivors applied the same log');
    const endAt = full.findIndex((l) => l.includes(' acquired zz/end '));
    assert.ok(endAt >= 0);
    const upToEnd = (ls: Line[]): Line[] => ls.slice(0, ls.findIndex((l) => l.includes(' acquired zz/end ')) + 1);
    for (const n of h.nodes) {
      const { openedAt, lines } = streamLines(streams.get(n.id)!);
      const want = full.filter((l) => Number(l.split(' ')[0]) > openedAt);
      if (n.id === leader) {
        assert.ok(lines.length > 0, 'the killed node streamed before it died');
        assert.deepEqual(lines, want.slice(0, lines.length), `${n.id}: its stream is a prefix of the log`);
        assert.deepEqual(logs.get(n.id)!.filter((l) => Number(l.split(' ')[0]) > openedAt).slice(0, lines.length), lines, `${n.id}: and of its own log`);
      } else {
        assert.deepEqual(upToEnd(lines), upToEnd(want), `${n.id}: its stream is its applied log`);
      }
    }
    const restarted = sseFrames(streams.get(`${leader}-restarted`)!.text()).filter((f) => f.event !== undefined).map((f) => line(Number(f.id), f.event!, f.data!));
    const opened0 = streamLines(streams.get(survivors[0]!)!).openedAt;
    assert.deepEqual(upToEnd(restarted), upToEnd(full.filter((l) => Number(l.split(' ')[0]) > opened0)), 'the restarted node resumes from its rebuilt window');
    const synced = seen.find((e) => e.event === 'synced')!;
    const sdkLines = seen.filter((e): e is WatchEvent => e.event !== 'synced' && e.event !== 'state').map((e) => line(e.index, e.event, e));
    assert.deepEqual(upToEnd(sdkLines), upToEnd(full.filter((l) => Number(l.split(' ')[0]) > synced.index)), 'the SDK saw every event once, in order, across the kill');
    assert.ok(full.some((l) => l.includes(' expired ') || l.includes('session_closed')), 'the run ended a session');
  });
});
