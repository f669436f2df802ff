// Follower → leader forwarding against a second, real fastify instance listening on
// 127.0.0.1:0: headers preserved, answers relayed as-is, one hop at most, and the right
// status when the leader is missing, down, or silent.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from '../../src/api/errors.js';
import type { GrantView } from '../../src/api/service.js';
import { ok } from '../../src/api/service-result.js';
import { FakeService } from './fake-service.js';
import { assertError, json, makeApp } from './helpers.js';

interface Seen { method: string; url: string; headers: IncomingHttpHeaders; body: unknown }

async function startLeader(service = new FakeService()): Promise<{ app: FastifyInstance; url: string; seen: Seen[]; service: FakeService }> {
  const seen: Seen[] = [];
  const { app } = makeApp({ service, nodeId: 'n1', authorize: ({ authorization }) => (authorization ? 'tok' : undefined) });
  app.addHook('preHandler', async (req) => {
    seen.push({ method: req.method, url: req.raw.url ?? '', headers: req.headers, body: req.body });
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url, seen, service };
}

function follower(leaderApi: string | null, forwardTimeoutMs = 2000) {
  const service = new FakeService();
  service.routingView = { isLeader: false, leaderApi };
  return makeApp({ service, nodeId: 'n2', forwardTimeoutMs });
}

describe('forwarding to a real leader', () => {
  let leader: Awaited<ReturnType<typeof startLeader>>;
  let f: ReturnType<typeof follower>;
  before(async () => {
    leader = await startLeader();
    f = follower(leader.url);
  });
  after(async () => {
    await f.app.close();
    await leader.app.close();
  });

  it('relays a write with its headers and body, and the answer as-is', async () => {
    const r = await f.app.inject({
      method: 'POST',
      url: '/v1/locks/db%2Fmain/acquire',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'key-1', authorization: 'Bearer s3cret', 'x-request-id': 'req-77' },
      payload: { ttl_ms: 2000, owner: 'w1' },
    });
    assert.equal(r.statusCode, 200, r.body);
    const g = json(r) as unknown as GrantView;
    assert.equal(g.name, 'db/main');
    assert.equal(r.headers['x-raftlock-forwarded'], 'n2');
    const s = leader.seen.at(-1);
    assert.ok(s);
    assert.equal(s.url, '/v1/locks/db%2Fmain/acquire', 'the raw path is kept (encoded slash and all)');
    assert.equal(s.headers['x-raftlock-forwarded'], 'n2');
    assert.equal(s.headers['idempotency-key'], 'key-1');
    assert.equal(s.headers.authorization, 'Bearer s3cret');
    assert.equal(s.headers['x-request-id'], 'req-77');
    assert.match(String(s.headers['content-type']), /^application\/json/);
    assert.deepEqual(s.body, { ttl_ms: 2000, owner: 'w1' });
    assert.equal(leader.service.last('acquire')?.ctx?.idempotencyKey, 'key-1');
    assert.equal(leader.service.last('acquire')?.ctx?.principal, 'tok');
    assert.equal(f.service.calls.length, 0, 'the follower itself applied nothing');
  });

  it('relays a body-less POST and errors with their status, body and Retry-After', async () => {
    const open = await f.app.inject({ method: 'POST', url: '/v1/sessions' });
    assert.equal(open.statusCode, 201);
    assert.equal(leader.seen.at(-1)?.body, undefined);

    const a = json(await f.app.inject({ method: 'POST', url: '/v1/locks/x/acquire' })) as unknown as GrantView;
    const held = await f.app.inject({ method: 'POST', url: '/v1/locks/x/acquire', payload: { session_id: (json(open) as { session_id: string }).session_id } });
    const e = assertError(held, 409, 'lock_held');
    assert.deepEqual(e.holder, { session_id: a.session_id, owner: '', fencing_token: a.fencing_token });

    leader.service.failWith = new ApiError('unavailable', 'leader lost quorum', { retryAfterS: 4 });
    try {
      const r = await f.app.inject({ method: 'POST', url: '/v1/sessions' });
      assertError(r, 503, 'unavailable', 'leader lost quorum');
      assert.equal(r.headers['retry-after'], '4');
    } finally {
      leader.service.failWith = null;
    }
  });

  it('linearizable reads are forwarded; ?consistency=stale is served locally', async () => {
    const before = leader.seen.length;
    assert.equal((await f.app.inject({ method: 'GET', url: '/v1/locks/x' })).statusCode, 200);
    assert.equal(leader.seen.length, before + 1);
    assert.equal((await f.app.inject({ method: 'GET', url: '/v1/locks/x?consistency=stale' })).statusCode, 200);
    assert.equal((await f.app.inject({ method: 'GET', url: '/v1/locks?consistency=stale' })).statusCode, 200);
    assert.equal(leader.seen.length, before + 1, 'stale reads never left the follower');
    assert.equal(f.service.last('getLock')?.args[1], 'stale');
    // GET /v1/cluster is this node's own view: local on any node.
    assert.equal(json(await f.app.inject({ method: 'GET', url: '/v1/cluster' })).role, 'follower');
  });

  it('bad input is refused by the follower without a hop', async () => {
    const before = leader.seen.length;
    assertError(await f.app.inject({ method: 'POST', url: '/v1/locks/x/acquire', payload: { wait_ms: 'soon' } }), 400, 'invalid_request', 'body.wait_ms');
    assert.equal(leader.seen.length, before);
  });

  it('a forwarded request reaching a non-leader gets 503, never a second hop', async () => {
    const r = await f.app.inject({ method: 'POST', url: '/v1/sessions', headers: { 'x-raftlock-forwarded': 'n3' } });
    assertError(r, 503, 'unavailable', 'already forwarded');
    assert.ok(Number(r.headers['retry-after']) >= 1);
    // Two followers that each believe the other leads: the request stops after one hop.
    const b = follower(null);
    const bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
    const a = follower(bUrl);
    b.service.routingView = { isLeader: false, leaderApi: 'http://127.0.0.1:1' };
    try {
      const r2 = await a.app.inject({ method: 'POST', url: '/v1/sessions' });
      assertError(r2, 503, 'unavailable', 'already forwarded');
    } finally {
      await a.app.close();
      await b.app.close();
    }
  });
});

describe('forwarding failures', () => {
  it('no leader known → 503 unavailable + Retry-After', async () => {
    const { app } = follower(null);
    try {
      const r = await app.inject({ method: 'POST', url: '/v1/locks/a/acquire' });
      assertError(r, 503, 'unavailable', 'no leader');
      assert.equal(r.headers['retry-after'], '1');
    } finally {
      await app.close();
    }
  });

  it('leader down (connection refused) → 503: nothing was sent, nothing applied', async () => {
    const dead = await startLeader();
    const url = dead.url;
    await dead.app.close();
    const { app } = follower(url);
    try {
      assertError(await app.inject({ method: 'POST', url: '/v1/locks/a/acquire' }), 503, 'unavailable', 'nothing was applied');
      assertError(await app.inject({ method: 'GET', url: '/v1/locks/a' }), 503, 'unavailable');
    } finally {
      await app.close();
    }
  });

  it('the leader answers 408 (its HTTP layer did not receive the relayed request whole) → 503: nothing was applied, never a 408 passed on as the answer', async () => {
    // a stand-in for the leader's node:http server timing a request out: fastify's default
    // clientError answer, with the request never reaching a handler
    const { createServer } = await import('node:http');
    const stub = createServer((req, res) => {
      req.resume();
      res.writeHead(408, { 'content-type': 'application/json', connection: 'close' });
      res.end('{"error":"Request Timeout","message":"Client Timeout","statusCode":408}');
    });
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
    const addr = stub.address();
    const { app } = follower(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`);
    try {
      assertError(await app.inject({ method: 'POST', url: '/v1/locks/a/acquire', headers: { 'idempotency-key': 'k' } }), 503, 'unavailable', 'nothing was applied');
      assertError(await app.inject({ method: 'GET', url: '/v1/locks/a' }), 503, 'unavailable');
    } finally {
      await app.close();
      await new Promise((r) => stub.close(r));
    }
  });

  it('leader silent after receiving a write → 504 timeout (outcome unknown); a read → 503', async () => {
    const svc = new FakeService();
    const never = new Promise<never>(() => undefined);
    svc.acquire = () => never;
    svc.getLock = () => never;
    const leader = await startLeader(svc);
    const { app } = follower(leader.url, 300);
    try {
      const t0 = Date.now();
      assertError(await app.inject({ method: 'POST', url: '/v1/locks/a/acquire', headers: { 'idempotency-key': 'k' } }), 504, 'timeout', 'same Idempotency-Key');
      assert.ok(Date.now() - t0 < 5000);
      assertError(await app.inject({ method: 'GET', url: '/v1/locks/a' }), 503, 'unavailable');
    } finally {
      await app.close();
      await leader.app.close();
    }
  });

  it('the forwarding budget grows with wait_ms: a waiting acquire is not cut at forwardTimeoutMs', async () => {
    const svc = new FakeService();
    svc.acquire = async (name, p) => {
      await new Promise((r) => setTimeout(r, 400)); // the leader legitimately waits (wait_ms)
      return ok({ name, session_id: p.sessionId ?? 's1', fencing_token: 9, ttl_ms: 10_000 });
    };
    const leader = await startLeader(svc);
    const { app } = follower(leader.url, 200);
    try {
      const r = await app.inject({ method: 'POST', url: '/v1/locks/a/acquire', payload: { wait_ms: 1000 } });
      assert.equal(r.statusCode, 200, r.body);
      assert.equal(json(r).fencing_token, 9);
    } finally {
      await app.close();
      await leader.app.close();
    }
  });
  it('a relay waits for the leader\'s own budget of the operation (membership, transfer, acquire), never giving up first', async () => {
    const slow = <T>(v: T): Promise<T> => new Promise((r) => setTimeout(() => r(v), 1500));
    const svc = new FakeService();
    svc.addMember = () => slow(ok(svc.cluster()));
    svc.removeMember = () => slow(ok(svc.cluster()));
    svc.transferLeadership = () => slow(ok({ leader_id: 'n3' }));
    svc.acquire = (name) => slow(ok({ name, session_id: 's1', fencing_token: 4, ttl_ms: 10_000 }));
    const leader = await startLeader(svc);
    // the follower's forwarding timeout alone (200 ms) is much shorter than the leader's 1.5 s
    const { app, service } = follower(leader.url, 200);
    const asked: string[] = [];
    service.leaderBudgetMs = (op, waitMs) => {
      asked.push(`${op}:${waitMs}`);
      return 3000 + waitMs;
    };
    const control = follower(leader.url, 200); // no budgets: the relay gives up at 200 ms
    try {
      const add = { id: 'n9', api: 'http://127.0.0.1:17009', peer: 'http://127.0.0.1:17109' };
      const [c, r1, r2, r3, r4] = await Promise.all([
        control.app.inject({ method: 'POST', url: '/v1/cluster/members', payload: add }),
        app.inject({ method: 'POST', url: '/v1/cluster/members', payload: add }),
        app.inject({ method: 'DELETE', url: '/v1/cluster/members/n9' }),
        app.inject({ method: 'POST', url: '/v1/cluster/transfer-leadership', payload: {} }),
        app.inject({ method: 'POST', url: '/v1/locks/a/acquire', payload: {} }),
      ]);
      assertError(c, 504, 'timeout');
      for (const r of [r1, r2, r3, r4]) assert.equal(r.statusCode, 200, r.body);
      assert.equal(json(r3).leader_id, 'n3');
      assert.deepEqual(asked.sort(), ['acquire:0', 'addMember:0', 'removeMember:0', 'transferLeadership:0']);
    } finally {
      await app.close();
      await control.app.close();
      await leader.app.close();
    }
  });
});
