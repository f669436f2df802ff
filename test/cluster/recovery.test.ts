// Recovery after every node is killed (docs/recovery.md): 3 real processes, election
// timeout 1000–2000 ms, sessions of 2 s kept alive by 12 clients competing for 3 locks;
// kill -9 of all three, restart on the same data. From the moment every node answers
// /healthz again, a lock must be granted within 2 × the maximum election timeout plus one
// session TTL, and exactly one leader must take office (no second, needless election).
// The timeline of the restart (process start → storage open → serving → election → first
// grant) is printed as diagnostics; docs/recovery.md quotes it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ClusterHarness, delay, eventually } from '../support/cluster-harness.js';

const ELECTION_MS: [number, number] = [1000, 2000];
const TTL_MS = 2000;
const CLIENTS = 12;
const LOCKS = ['r0', 'r1', 'r2'];
const GRANT_BOUND_MS = 2 * ELECTION_MS[1] + TTL_MS;

/** one line of a node's JSON log that the timeline needs */
interface LogEvent {
  node: string;
  time: number;
  msg: string;
  role?: string;
  term?: number;
  startupMs?: number;
}

function events(h: ClusterHarness, id: string): LogEvent[] {
  const out: LogEvent[] = [];
  for (const line of h.logText(id).split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const j = JSON.parse(line) as LogEvent;
      out.push({ ...j, node: id });
    } catch {
      /* a line cut short by kill -9 */
    }
  }
  return out;
}

describe('recovery of a real 3-node cluster after kill -9 of every node', { timeout: 120_000 }, () => {
  let h: ClusterHarness;
  let stopping = false;
  /** Date.now() of every successful acquire */
  const grants: number[] = [];
  const loops: Promise<void>[] = [];

  /** a client: one session kept alive every ttl/4, acquire (no wait) → hold briefly → release */
  async function client(i: number): Promise<void> {
    let sid: string | null = null;
    let via = i % 3;
    const node = (): string => h.nodes[via]!.id;
    const next = (): void => void (via = (via + 1) % 3);
    let keepaliveAt = 0;
    while (!stopping) {
      try {
        if (sid === null) {
          const r = await h.requestRaw(node(), 'POST', '/v1/sessions', JSON.stringify({ ttl_ms: TTL_MS }), { 'content-type': 'application/json', 'idempotency-key': randomUUID() }, 3000);
          if (r.status === 200 || r.status === 201) sid = (JSON.parse(r.text) as { session_id: string }).session_id;
          else next();
          await delay(100);
          continue;
        }
        if (Date.now() >= keepaliveAt) {
          const k = await h.requestRaw(node(), 'POST', `/v1/sessions/${sid}/keepalive`, undefined, { 'idempotency-key': randomUUID() }, 1500);
          if (k.status === 404) sid = null;
          else if (k.status === 200) keepaliveAt = Date.now() + TTL_MS / 4;
          else next();
          continue;
        }
        const lock = LOCKS[(i + Math.floor(Date.now() / 1000)) % LOCKS.length]!;
        const a = await h.requestRaw(node(), 'POST', `/v1/locks/${lock}/acquire`, JSON.stringify({ session_id: sid, wait_ms: 0 }), { 'content-type': 'application/json', 'idempotency-key': randomUUID() }, 3000);
        if (a.status === 200) {
          grants.push(Date.now());
          const token = (JSON.parse(a.text) as { fencing_token: number }).fencing_token;
          await delay(50);
          const key = randomUUID();
          // retry the release with its key until a definite answer (or the session is gone)
          for (let n = 0; n < 20 && !stopping; n++) {
            const r = await h.requestRaw(node(), 'POST', `/v1/locks/${lock}/release`, JSON.stringify({ session_id: sid, fencing_token: token }), { 'content-type': 'application/json', 'idempotency-key': key }, 3000).catch(() => null);
            if (r && r.status < 500) break;
            next();
            await delay(100);
          }
        } else if (a.status === 404) sid = null;
        else if (a.status >= 500) next();
        await delay(100 + ((i * 37) % 100));
      } catch {
        // the node is down (killed) or slow: try the next one
        next();
        await delay(100);
      }
    }
  }

  before(async () => {
    h = await ClusterHarness.create({ electionTimeoutMs: ELECTION_MS, heartbeatMs: 100, session: { default_ttl_ms: TTL_MS, min_ttl_ms: 100 } });
    h.startAll();
    await h.waitForLeader(30_000);
  });
  after(async () => {
    stopping = true;
    await Promise.all(loops);
    await h?.close();
  });

  it('kill -9 of all three, restart: one election, and a grant within 2 × max election timeout + one TTL', async (t) => {
    for (let i = 0; i < CLIENTS; i++) loops.push(client(i));
    // state: sessions, holders, released locks and idempotency keys in the log
    await eventually(async () => grants.length >= 20, 30_000, '20 grants before the crash');
    const termBefore = Math.max(...(await Promise.all(h.nodes.map((n) => h.view(n.id)))).map((v) => v.term));

    await Promise.all(h.nodes.map((n) => h.kill(n.id)));
    const killedAt = Date.now();
    await delay(1000); // held down: the clients' requests fail meanwhile
    const restartedAt = Date.now();
    h.startAll();
    // back = every node serves its API again (process start-up is not the cluster's recovery)
    await eventually(async () => {
      const rs = await Promise.all(h.nodes.map((n) => h.requestRaw(n.id, 'GET', '/healthz', undefined, {}, 1000).catch(() => null)));
      return rs.every((r) => r?.status === 200);
    }, 60_000, 'every node to answer /healthz after the restart');
    const backAt = Date.now();
    const grant = await eventually(async () => grants.find((g) => g >= backAt), GRANT_BOUND_MS + 10_000, 'a grant after the restart');
    // watch long enough for a needless second election to show: two maximum timeouts
    await delay(2 * ELECTION_MS[1]);

    const log = h.nodes.flatMap((n) => events(h, n.id)).filter((e) => e.time >= restartedAt).sort((a, b) => a.time - b.time);
    const leaders = [...new Map(log.filter((e) => e.msg === 'role changed' && e.role === 'leader' && (e.term ?? 0) > termBefore).map((e) => [e.term, e])).values()];
    const first = (msg: string): number => Math.min(...log.filter((e) => e.msg === msg).map((e) => e.time));
    const last = (msg: string): number => Math.max(...log.filter((e) => e.msg === msg).map((e) => e.time));
    const rel = (x: number): string => `+${((x - restartedAt) / 1000).toFixed(2)} s`;
    t.diagnostic(`killed at -${((restartedAt - killedAt) / 1000).toFixed(1)} s; restart (spawn) at +0`);
    t.diagnostic(`storage open: ${rel(first('storage loaded'))} … ${rel(last('storage loaded'))}; serving: ${rel(first('node started'))} … ${rel(last('node started'))} (startupMs ${log.filter((e) => e.msg === 'node started').map((e) => e.startupMs).join(', ')})`);
    t.diagnostic(`every node answers /healthz: ${rel(backAt)}`);
    for (const l of leaders) t.diagnostic(`leader ${l.node} of term ${l.term}: ${rel(l.time)}`);
    t.diagnostic(`first grant: ${rel(grant)} (${grant - backAt} ms after every node was back; bound ${GRANT_BOUND_MS} ms)`);
    for (const e of log.filter((x) => /blocked|slow storage|reachable again|unreachable/.test(x.msg))) t.diagnostic(`${e.node} ${rel(e.time)} ${e.msg}`);

    assert.ok(grant - backAt <= GRANT_BOUND_MS, `first grant ${grant - backAt} ms after every node was back, above ${GRANT_BOUND_MS} ms`);
    assert.equal(leaders.length, 1, `exactly one leader after the restart, got: ${leaders.map((l) => `${l.node}@term ${l.term} ${rel(l.time)}`).join(', ')}`);
  });
});
