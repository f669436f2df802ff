// Failures of real processes in a 5-node cluster: kill -9 of the leader (a new
// leader within 2 × the maximum election timeout, every lock still held with its token,
// an Idempotency-Key retry across the leader change answering like the first try), a
// killed node catching up after restart — by log, and by SNAPSHOT when it is behind the
// leader's compaction — and a graceful stop (SIGTERM) of the leader that hands leadership
// over while a client loop keeps acquiring and releasing with no failed request.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterHarness, delay, eventually, type HarnessResponse } from '../support/cluster-harness.js';
import { TokenWitness, assertError, sendRetrying503, uniqueKey, type RetryLog } from './helpers.js';

const ELECTION_MS: [number, number] = [300, 600];
const SNAPSHOT_EVERY = 50;

describe('failover of a real 5-node cluster', { timeout: 180_000 }, () => {
  let h: ClusterHarness;
  let ids: string[];
  const tokens = new TokenWitness();
  /** locks held across the failures, with the tokens they must keep */
  const held = new Map<string, { sid: string; token: number }>();

  const post = (id: string, path: string, body?: unknown, key?: string): Promise<HarnessResponse> =>
    h.request(id, 'POST', path, body, key ? { 'idempotency-key': key } : {});
  const get = (id: string, path: string): Promise<HarnessResponse> => h.request(id, 'GET', path);

  /** the first node (of `among`) that reports itself leader in a term above `aboveTerm` */
  async function leaderAbove(aboveTerm: number, among: string[], timeoutMs: number): Promise<{ id: string; term: number }> {
    return eventually(async () => {
      const views = await Promise.all(among.map((id) => h.view(id).catch(() => null)));
      const v = views.find((x) => x && x.role === 'leader' && x.term > aboveTerm);
      return v ? { id: v.node_id, term: v.term } : null;
    }, timeoutMs, `a leader above term ${aboveTerm} among ${among.join(',')}`);
  }

  async function assertHeldEverywhere(among: string[], what: string): Promise<void> {
    for (const [name, want] of held) {
      for (const id of among) {
        // a 503 (no leader known: one may be elected again right after a restart) says
        // "retry": do, until a deadline; any other answer is the one to check
        let g = await get(id, `/v1/locks/${name}`);
        for (const deadline = Date.now() + 20_000; g.status === 503 && Date.now() < deadline; ) {
          await delay(200);
          g = await get(id, `/v1/locks/${name}`);
        }
        assert.equal(g.status, 200, `${what}: GET ${name} via ${id}: ${g.text}`);
        assert.equal(g.body.holder?.session_id, want.sid, `${what}: holder of ${name} via ${id}`);
        assert.equal(g.body.holder?.fencing_token, want.token, `${what}: token of ${name} via ${id}`);
      }
    }
  }

  before(async () => {
    h = await ClusterHarness.create({ nodes: 5, electionTimeoutMs: ELECTION_MS, snapshotEveryEntries: SNAPSHOT_EVERY, session: { default_ttl_ms: 300_000 } });
    ids = h.nodes.map((n) => n.id);
    h.startAll();
    await h.waitForLeader();
  });
  after(async () => {
    await h?.close();
  });

  it('kill -9 of the leader: a new leader within 2 × the max election timeout; locks keep their tokens; an idempotent retry across the change returns the first answer', async (t) => {
    const old = await h.waitForLeader(10_000);
    const oldTerm = (await h.view(old)).term;
    const followers = ids.filter((x) => x !== old);
    for (const [i, via] of ids.entries()) {
      const name = `ha/held-${i}`;
      const r = await post(via, `/v1/locks/${name}/acquire`, {});
      assert.equal(r.status, 200, r.text);
      held.set(name, { sid: r.body.session_id, token: tokens.grant(r.body.fencing_token, name) });
    }
    // the first try of an idempotent acquire and an idempotent open, answered by the old leader
    const key = uniqueKey('ha-acq');
    const first = await post(old, '/v1/locks/ha/idem/acquire', {}, key);
    assert.equal(first.status, 200, first.text);
    tokens.grant(first.body.fencing_token, 'ha/idem');
    held.set('ha/idem', { sid: first.body.session_id, token: first.body.fencing_token });
    const okey = uniqueKey('ha-open');
    const firstOpen = await post(old, '/v1/sessions', {}, okey);
    assert.equal(firstOpen.status, 201, firstOpen.text);
    // every survivor has applied them (so the answer is the stored one, not a replay race)
    await h.waitForApplied((await h.view(old)).commit_index, followers);

    const t0 = Date.now();
    await h.kill(old);
    const { id: next, term } = await leaderAbove(oldTerm, followers, 10_000);
    const electedMs = Date.now() - t0;
    t.diagnostic(`new leader ${next} (term ${term}) ${electedMs} ms after kill -9 of ${old}`);
    assert.ok(electedMs <= 2 * ELECTION_MS[1], `new leader after ${electedMs} ms, more than 2 × ${ELECTION_MS[1]} ms`);
    await h.waitForLeader(10_000, followers);

    await assertHeldEverywhere(followers, 'after kill -9 of the leader');
    // the retries, through a different node, return the first answers and change nothing
    const retry = await post(followers[1]!, '/v1/locks/ha/idem/acquire', {}, key);
    assert.equal(retry.status, 200, retry.text);
    assert.deepEqual(retry.body, first.body);
    const retryOpen = await post(followers[2]!, '/v1/sessions', {}, okey);
    assert.equal(retryOpen.status, 201, retryOpen.text);
    assert.deepEqual(retryOpen.body, firstOpen.body);
    assert.equal((await get(followers[0]!, `/v1/sessions/${firstOpen.body.session_id}`)).status, 200);
    // new grants, through every survivor, carry greater tokens
    for (const via of followers) {
      const r = await post(via, `/v1/locks/ha/new-${via}/acquire`, {});
      assert.equal(r.status, 200, r.text);
      held.set(`ha/new-${via}`, { sid: r.body.session_id, token: tokens.grant(r.body.fencing_token, `ha/new-${via}`) });
    }
  });

  it('a killed node restarts and catches up: its applied index reaches the leader\'s commit index', async () => {
    const down = ids.find((id) => !h.node(id).proc);
    assert.ok(down, 'the previous test left one node down');
    h.start(down);
    const l = await h.waitForLeader();
    const commit = (await h.view(l)).commit_index;
    await h.waitForApplied(commit, [down]);
    assert.equal((await h.view(down)).leader_id, l);
    // its local (stale) view agrees with the leader on every held lock
    for (const [name, want] of held) {
      const g = await get(down, `/v1/locks/${name}?consistency=stale`);
      assert.equal(g.body.holder?.fencing_token, want.token, `${name} on the restarted ${down}`);
    }
    await assertHeldEverywhere(ids, 'after the restart');
  });

  it('a node down while the leader compacts its log catches up by snapshot', async (t) => {
    const l = await h.waitForLeader(10_000);
    const victim = ids.find((x) => x !== l)!;
    const snapshotsBefore = (h.logText(victim).match(/installed a snapshot from the leader/g) ?? []).length;
    await h.kill(victim);
    const live = ids.filter((x) => x !== victim);
    const startIndex = (await h.view(l)).commit_index;

    // a few hundred entries while it is down: 200 grants, then 100 releases, 8 at a time
    const names = Array.from({ length: 200 }, (_, i) => `snap/${String(i).padStart(3, '0')}`);
    const grants = new Map<string, { sid: string; token: number }>();
    for (let i = 0; i < names.length; i += 8) {
      const batch = names.slice(i, i + 8);
      const rs = await Promise.all(batch.map((name, j) => post(live[j % live.length]!, `/v1/locks/${name}/acquire`, {})));
      for (const [j, r] of rs.entries()) {
        assert.equal(r.status, 200, `${batch[j]}: ${r.text}`);
        grants.set(batch[j]!, { sid: r.body.session_id, token: r.body.fencing_token });
      }
    }
    const released = names.filter((_, i) => i % 2 === 0);
    for (let i = 0; i < released.length; i += 8) {
      const batch = released.slice(i, i + 8);
      const rs = await Promise.all(batch.map((name, j) => post(live[j % live.length]!, `/v1/locks/${name}/release`, { session_id: grants.get(name)!.sid })));
      for (const r of rs) assert.equal(r.status, 200, r.text);
    }
    const commit = (await h.view(l)).commit_index;
    t.diagnostic(`${commit - startIndex} entries committed while ${victim} was down (snapshot every ${SNAPSHOT_EVERY})`);
    assert.ok(commit - startIndex >= 300, `only ${commit - startIndex} entries written`);

    h.start(victim);
    const t0 = Date.now();
    await h.waitForApplied(commit, [victim]);
    t.diagnostic(`${victim} applied through ${commit} ${Date.now() - t0} ms after restart`);
    await eventually(async () => (h.logText(victim).match(/installed a snapshot from the leader/g) ?? []).length > snapshotsBefore, 5000, `${victim} to log a snapshot install`);

    // its local state is the cluster's: every lock written while it was down
    const list = await get(victim, '/v1/locks?prefix=snap/&consistency=stale&limit=1000');
    assert.equal(list.status, 200, list.text);
    const heldNames = (list.body.locks as { name: string; holder: { fencing_token: number } }[]).map((x) => x.name).sort();
    assert.deepEqual(heldNames, names.filter((_, i) => i % 2 === 1));
    for (const x of list.body.locks as { name: string; holder: { fencing_token: number; session_id: string } }[]) {
      assert.equal(x.holder.fencing_token, grants.get(x.name)!.token, x.name);
      assert.equal(x.holder.session_id, grants.get(x.name)!.sid, x.name);
    }
    for (const [name, want] of held) {
      const g = await get(victim, `/v1/locks/${name}?consistency=stale`);
      assert.equal(g.body.holder?.fencing_token, want.token, `${name} on ${victim} after the snapshot`);
    }
    // the concurrent grants were all distinct and above every earlier one (their order
    // among themselves is unknown: check them sorted)
    for (const tk of [...grants.values()].map((g) => g.token).sort((a, b) => a - b)) tokens.grant(tk, 'a snap/* grant');
    // and it is a working member again: a write through it commits, with a greater token
    const r = await post(victim, '/v1/locks/snap/after/acquire', {});
    assert.equal(r.status, 200, r.text);
    tokens.grant(r.body.fencing_token, 'snap/after');
  });

  it('graceful stop (SIGTERM) of the leader hands leadership over with no failed request in a concurrent acquire/release loop', async (t) => {
    await h.waitForApplied((await h.view(await h.waitForLeader(10_000))).commit_index, ids, 15_000);
    const old = await h.waitForLeader(10_000);
    const oldTerm = (await h.view(old)).term;
    const survivors = ids.filter((x) => x !== old);
    const log: RetryLog = { retried503: 0, retriedNetwork: 0 };
    const failures: string[] = [];
    let stop = false;
    let ops = 0;
    let rr = 0;
    const via = (): string => survivors[rr++ % survivors.length]!;

    const worker = async (w: number): Promise<void> => {
      const s = await sendRetrying503(h, via, 'POST', '/v1/sessions', { ttl_ms: 60_000 }, uniqueKey(`w${w}-open`), log);
      if (s.status !== 201) {
        failures.push(`worker ${w} open: ${s.status} ${s.text}`);
        return;
      }
      const sid = s.body.session_id as string;
      const name = `stop/w${w}`;
      let lastToken = 0;
      while (!stop) {
        const a = await sendRetrying503(h, via, 'POST', `/v1/locks/${name}/acquire`, { session_id: sid }, uniqueKey(`w${w}-acq`), log);
        if (a.status !== 200) {
          failures.push(`worker ${w} acquire: ${a.status} ${a.text}`);
          return;
        }
        if (!(a.body.fencing_token > lastToken)) failures.push(`worker ${w}: token ${a.body.fencing_token} after ${lastToken}`);
        lastToken = a.body.fencing_token;
        const r = await sendRetrying503(h, via, 'POST', `/v1/locks/${name}/release`, { session_id: sid, fencing_token: lastToken }, uniqueKey(`w${w}-rel`), log);
        if (r.status !== 200) {
          failures.push(`worker ${w} release: ${r.status} ${r.text}`);
          return;
        }
        ops++;
      }
    };
    const workers = [0, 1, 2, 3].map((w) => worker(w).catch((err: unknown) => void failures.push(`worker ${w} threw: ${String(err)}`)));

    await eventually(async () => ops >= 20, 15_000, 'the loop to get going');
    const opsBefore = ops;
    const t0 = Date.now();
    const code = await h.stop(old, 20_000);
    const stoppedMs = Date.now() - t0;
    const { id: next, term } = await leaderAbove(oldTerm, survivors, 10_000);
    const movedMs = Date.now() - t0;
    // keep the loop running under the new leader for a while
    await eventually(async () => ops >= opsBefore + 40, 20_000, 'the loop to continue under the new leader');
    stop = true;
    await Promise.all(workers);

    t.diagnostic(`SIGTERM ${old}: exited ${code} after ${stoppedMs} ms; leader ${next} (term ${term}) known ${movedMs} ms after the signal; ${ops} acquire/release pairs, ${log.retried503} 503 retries`);
    assert.deepEqual(failures, []);
    assert.equal(code, 0, `${old} exit code`);
    assert.match(h.logText(old), /handed leadership over before stopping/);
    assert.doesNotMatch(h.logText(old), /leadership transfer before stopping failed/);
    await assertHeldEverywhere(survivors, 'after the graceful stop');
  });

  it('a waiting acquire outlives the leader: its retry with the same Idempotency-Key finds its place in the queue, then the grant', async (t) => {
    for (const id of ids) if (!h.node(id).proc) h.start(id);
    const old = await h.waitForLeader(20_000);
    const [a, b] = ids.filter((x) => x !== old);
    const holder = await post(a!, '/v1/locks/ha/wait/acquire', {});
    assert.equal(holder.status, 200, holder.text);
    held.set('ha/wait', { sid: holder.body.session_id, token: tokens.grant(holder.body.fencing_token, 'ha/wait holder') });
    const s = await post(a!, '/v1/sessions', { ttl_ms: 60_000 });
    assert.equal(s.status, 201, s.text);
    const sid = s.body.session_id as string;
    const key = uniqueKey('ha-wait');
    const body = { session_id: sid, wait_ms: 30_000 };
    const firstTry = post(a!, '/v1/locks/ha/wait/acquire', body, key);
    await eventually(async () => (await get(b!, '/v1/locks/ha/wait')).body.waiters === 1, 10_000, 'the waiter to queue');
    await h.waitForApplied((await h.view(old)).commit_index, ids.filter((x) => x !== old));

    await h.kill(old);
    // the follower that relayed the wait cannot know what became of it: not a grant, and
    // if it says anything definite it is 503 (nothing applied) or 504 (retry with the key)
    const lost = await firstTry;
    t.diagnostic(`the waiting request, relayed by ${a} to the killed leader ${old}, answered ${lost.status} ${lost.body?.error?.code ?? ''}`);
    assert.ok(lost.status === 504 || lost.status === 503, `first try: ${lost.status} ${lost.text}`);

    const survivors = ids.filter((x) => x !== old);
    await h.waitForLeader(10_000, survivors);
    // the retry finds its place (still exactly one waiter: the same session, not a new one)
    const retry = post(b!, '/v1/locks/ha/wait/acquire', body, key);
    await eventually(async () => (await get(b!, '/v1/locks/ha/wait')).body.waiters === 1, 10_000, 'the retried waiter to be (still) queued');
    const rel = await post(survivors[2]!, '/v1/locks/ha/wait/release', { session_id: holder.body.session_id });
    assert.equal(rel.status, 200, rel.text);
    const granted = await retry;
    assert.equal(granted.status, 200, granted.text);
    assert.equal(granted.body.session_id, sid);
    held.set('ha/wait', { sid, token: tokens.grant(granted.body.fencing_token, 'ha/wait waiter') });
    assert.equal((await get(b!, '/v1/locks/ha/wait')).body.waiters, 0);
  });

  it('kill -9 of EVERY node, then restart: every acknowledged grant is still there with its token; new tokens are greater', async () => {
    for (const id of ids) if (!h.node(id).proc) h.start(id);
    const l = await h.waitForLeader();
    const last = await post(l, '/v1/locks/ha/last/acquire', {});
    assert.equal(last.status, 200, last.text);
    held.set('ha/last', { sid: last.body.session_id, token: tokens.grant(last.body.fencing_token, 'ha/last') });
    // an Idempotency-Key's binding to its request (docs/api.md "Idempotency") must survive
    // snapshots and the restart: more than SNAPSHOT_EVERY entries follow it, so every node
    // restores it from a snapshot, not from its log
    const bkey = uniqueKey('ha-bound');
    const bound = await post(l, '/v1/locks/ha/bound/acquire', {}, bkey);
    assert.equal(bound.status, 200, bound.text);
    held.set('ha/bound', { sid: bound.body.session_id, token: tokens.grant(bound.body.fencing_token, 'ha/bound') });
    for (let i = 0; i < SNAPSHOT_EVERY + 10; i += 10) {
      for (const r of await Promise.all(Array.from({ length: 10 }, () => post(l, '/v1/sessions', {})))) assert.equal(r.status, 201, r.text);
    }
    await h.waitForApplied((await h.view(l)).commit_index, ids);
    // acknowledged means committed on a majority's disks: kill everything at once, no flush
    await Promise.all(ids.map((id) => h.kill(id)));
    h.startAll();
    await h.waitForLeader();
    await assertHeldEverywhere(ids, 'after kill -9 of every node and a restart');
    const noRetry: RetryLog = { retried503: 0, retriedNetwork: 0 };
    const reused = await sendRetrying503(h, () => ids[1]!, 'POST', '/v1/locks/ha/bound-other/acquire', {}, bkey, noRetry);
    assertError(reused, 422, 'idempotency_key_reused', 'the key of ha/bound, reused for another lock after the restart');
    assert.equal((await get(ids[2]!, '/v1/locks/ha/bound-other')).body.held, false);
    const again = await sendRetrying503(h, () => ids[3]!, 'POST', '/v1/locks/ha/bound/acquire', {}, bkey, noRetry);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, bound.body, 'the retry gets the first answer after the restart');
    const next = await post(ids[0]!, '/v1/locks/ha/after-restart/acquire', {});
    assert.equal(next.status, 200, next.text);
    tokens.grant(next.body.fencing_token, 'ha/after-restart');
  });
});
