// SDK units without a cluster: duration parsing, error mapping, endpoint rotation and
// backoff, and the retry/failover rules of HttpCaller against tiny fake HTTP servers
// (ephemeral ports, closed in `after`).
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { parseDuration, formatDuration, DurationError } from '@raftlock/client';
import { MAX_DURATION_MS } from '@raftlock/client/duration';
import { EndpointSet, normalizeEndpoint, parseRetryAfter } from '@raftlock/client/internal';
import {
  errorFromResponse, DeadlockError, IdempotencyKeyReusedError, InvalidRequestError, LockHeldError, NotHolderError, OutcomeUnknownError, PermissionDeniedError, RaftlockError,
  SessionNotFoundError, TooManyRequestsError, UnavailableError,
} from '@raftlock/client';
import { RaftlockClient } from '@raftlock/client';
import { freePort } from '../support/cluster-harness.js';

describe('parseDuration', () => {
  it('accepts the units people type', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('10s'), 10_000);
    assert.equal(parseDuration('1.5m'), 90_000);
    assert.equal(parseDuration('1h'), 3_600_000);
    assert.equal(parseDuration('250'), 250);
    assert.equal(parseDuration(' 2s '), 2000);
    assert.equal(parseDuration('0s'), 0);
    // the bound is the log's (MAX_DURATION_MS, 2^31-1 ms): any max_hold_ms the API takes can be typed
    assert.equal(parseDuration('596h'), 2_145_600_000);
    assert.equal(parseDuration('2147483647'), MAX_DURATION_MS);
  });
  it('refuses everything else with the input quoted', () => {
    for (const bad of ['', 's', '10q', '-1s', '1e3', '10 s', '1.0005s', '597h', '2147483648', 'NaN', '0x10']) {
      assert.throws(() => parseDuration(bad, '--ttl'), (e: unknown) => e instanceof DurationError && e.message.startsWith('--ttl:') && e.message.includes(JSON.stringify(bad)), bad);
    }
  });
  it('formats for messages', () => {
    assert.equal(formatDuration(250), '250ms');
    assert.equal(formatDuration(10_000), '10s');
    assert.equal(formatDuration(1500), '1.5s');
    assert.equal(formatDuration(90_000), '1.5m');
    assert.equal(formatDuration(7_200_000), '2h');
  });
});

describe('errorFromResponse', () => {
  const ep = 'http://n1:7001';
  it('maps every contract code to its class', () => {
    const holder = { session_id: 's1', owner: 'o', fencing_token: 7 };
    const e = errorFromResponse(409, { error: { code: 'lock_held', message: 'held', holder } }, ep);
    assert.ok(e instanceof LockHeldError);
    assert.deepEqual((e as LockHeldError).holder, { sessionId: 's1', owner: 'o', fencingToken: 7 });
    assert.equal(e.endpoint, ep);
    assert.equal(e.status, 409);
    assert.ok(e.message.includes(ep) && e.message.includes('held'));
    const table: [number, string, new (...a: never[]) => RaftlockError][] = [
      [409, 'not_holder', NotHolderError],
      [404, 'session_not_found', SessionNotFoundError],
      [503, 'unavailable', UnavailableError],
      [429, 'too_many_requests', TooManyRequestsError],
      [504, 'timeout', OutcomeUnknownError],
      [400, 'invalid_request', InvalidRequestError],
      [413, 'payload_too_large', InvalidRequestError],
      [415, 'unsupported_media_type', InvalidRequestError],
      [401, 'unauthenticated', PermissionDeniedError],
      [403, 'permission_denied', PermissionDeniedError],
      [422, 'idempotency_key_reused', IdempotencyKeyReusedError],
    ];
    for (const [status, code, cls] of table) {
      const err = errorFromResponse(status, { error: { code, message: 'm' } }, ep);
      assert.ok(err instanceof cls, `${code} → ${cls.name}, got ${err.name}`);
      assert.equal(err.code, code);
    }
    assert.ok(errorFromResponse(504, {}, ep) instanceof UnavailableError, 'OutcomeUnknownError is an UnavailableError');
  });
  it('survives bodies that are not the contract shape', () => {
    for (const body of [undefined, null, 'text', [], { error: 'x' }, { error: { code: 5 } }]) {
      const e = errorFromResponse(503, body, ep);
      assert.ok(e instanceof UnavailableError);
    }
    const e = errorFromResponse(500, undefined, ep);
    assert.equal(e.code, 'internal');
    assert.ok(errorFromResponse(409, { error: { code: 'lock_held', message: 'x', holder: 'nope' } }, ep) instanceof LockHeldError);
  });
  it('lock sets and deadlocks (docs/contract.md §5): blocked on lock_held, DeadlockError with its cycle; malformed rows are dropped', () => {
    const held = errorFromResponse(409, { error: { code: 'lock_held', message: 'm', blocked: [{ name: 'a', holder: { session_id: 's2', owner: '', fencing_token: 4 } }, { name: 'b' }, { nope: 1 }] } }, ep);
    assert.ok(held instanceof LockHeldError);
    assert.deepEqual(held.blocked, [{ name: 'a', holder: { sessionId: 's2', owner: '', fencingToken: 4 } }, { name: 'b' }]);
    assert.equal(held.holder, undefined);
    assert.equal((errorFromResponse(409, { error: { code: 'lock_held', message: 'm' } }, ep) as LockHeldError).blocked, undefined);
    const dl = errorFromResponse(409, { error: { code: 'deadlock', message: 'm', cycle: [{ session_id: 's1', name: 'x' }, { session_id: 's2', name: 'p', kind: 'semaphore' }, 'junk'] } }, ep);
    assert.ok(dl instanceof DeadlockError);
    assert.equal(dl.code, 'deadlock');
    assert.deepEqual(dl.cycle, [{ sessionId: 's1', name: 'x' }, { sessionId: 's2', name: 'p', kind: 'semaphore' }]);
    assert.deepEqual((errorFromResponse(409, { error: { code: 'deadlock', message: 'm' } }, ep) as DeadlockError).cycle, []);
  });
});

describe('EndpointSet', () => {
  it('rotates, rests failed endpoints, and reports the wait when all rest', () => {
    let now = 1000;
    const set = new EndpointSet(['http://a:1/', 'http://b:1', 'http://c:1'], () => now);
    assert.deepEqual(set.urls, ['http://a:1', 'http://b:1', 'http://c:1']);
    assert.deepEqual([set.pick().url, set.pick().url, set.pick().url, set.pick().url], ['http://a:1', 'http://b:1', 'http://c:1', 'http://a:1']);
    set.retryAfter('http://b:1', 1000);
    assert.deepEqual([set.pick().url, set.pick().url, set.pick().url], ['http://c:1', 'http://a:1', 'http://c:1']);
    set.connectFailed('http://a:1');
    set.connectFailed('http://c:1');
    const p = set.pick();
    assert.equal(p.url, 'http://a:1');
    assert.equal(p.waitMs, 100, 'the first connection failure rests 100 ms');
    now += 100;
    assert.equal(set.pick().waitMs, 0);
    set.succeeded('http://a:1');
    now += 1000;
    assert.equal(set.pick().waitMs, 0);
  });
  it('backs off exponentially on repeated connection failures, capped', () => {
    const now = 0;
    const set = new EndpointSet(['http://a:1'], () => now);
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      set.connectFailed('http://a:1');
      waits.push(set.pick().waitMs);
    }
    assert.deepEqual(waits, [100, 200, 400, 800, 1600, 2000, 2000, 2000]);
  });
  it('leader routing: a hint naming one of the endpoints is preferred while it is ready; anything else is ignored', () => {
    let now = 0;
    const set = new EndpointSet(['http://a:1', 'http://b:1', 'http://c:1'], () => now);
    assert.equal(set.leaderUrl, null);
    assert.equal(set.pick(true).url, 'http://a:1', 'no hint yet: the rotation');
    set.noteLeader('http://c:1/');
    assert.equal(set.leaderUrl, 'http://c:1', 'normalised like the endpoints');
    assert.deepEqual([set.pick(true).url, set.pick(true).url], ['http://c:1', 'http://c:1']);
    assert.equal(set.pick().url, 'http://b:1', 'calls for any node keep rotating (the leader picks did not advance it)');
    // hints that name no endpoint of ours, or are malformed or absent, change nothing
    for (const h of ['http://evil:1', 'not a url', '', undefined, ['ftp://x:1']]) {
      set.noteLeader(h);
      assert.equal(set.leaderUrl, 'http://c:1', `hint ${JSON.stringify(h)} ignored`);
    }
    // a resting leader is not waited for: the rotation takes over until it is ready again
    set.retryAfter('http://c:1', 1000);
    assert.equal(set.pick(true).url, 'http://a:1');
    assert.equal(set.pick(true).waitMs, 0);
    now += 1000;
    assert.equal(set.pick(true).url, 'http://c:1');
    set.noteLeader(['http://a:1', 'http://b:1']);
    assert.equal(set.leaderUrl, 'http://a:1', 'a repeated header: the first value');
  });
  it('parses Retry-After (seconds or date), clamps it, falls back when malformed', () => {
    assert.equal(parseRetryAfter('2', 1000), 2000);
    assert.equal(parseRetryAfter(undefined, 1000), 1000);
    assert.equal(parseRetryAfter('soon', 1000), 1000);
    assert.equal(parseRetryAfter('99999', 1000), 30_000);
    assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 1000, 7_000), 3000);
  });
  it('rejects what is not an http(s) URL', () => {
    assert.throws(() => normalizeEndpoint('127.0.0.1:7001'), /not a URL|http/);
    assert.throws(() => normalizeEndpoint('ftp://x:1'), /http/);
    assert.equal(normalizeEndpoint('https://x:1/'), 'https://x:1');
  });
});

// ---- failover against fake servers --------------------------------------------------------

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

async function fake(handler: Handler): Promise<string> {
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handler(req, res, body));
  });
  srv.keepAliveTimeout = 100;
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const addr = srv.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const grant = { name: 'a', session_id: 's1', fencing_token: 9, ttl_ms: 5000 };

describe('RaftlockClient failover and retries (fake servers)', () => {
  it('fails over from a refused endpoint and a 503 to one that answers', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    let busyHits = 0;
    const busy = await fake((_q, res) => {
      busyHits++;
      json(res, 503, { error: { code: 'unavailable', message: 'no leader' } }, { 'retry-after': '1' });
    });
    const good = await fake((_q, res) => json(res, 200, grant));
    const c = new RaftlockClient({ endpoints: [dead, busy, good], random: () => 0 });
    try {
      const g = await c.acquire('a');
      assert.equal(g.fencingToken, 9);
      assert.ok(busyHits <= 1);
    } finally {
      await c.close();
    }
  });

  it('repeats a mutation after 504 with the SAME Idempotency-Key, and shrinks wait_ms', async () => {
    const keys: string[] = [];
    const waits: number[] = [];
    const ep = await fake((req, res, body) => {
      keys.push(String(req.headers['idempotency-key']));
      waits.push((JSON.parse(body) as { wait_ms: number }).wait_ms);
      if (keys.length < 3) {
        setTimeout(() => json(res, 504, { error: { code: 'timeout', message: 'unknown' } }), 30);
        return;
      }
      json(res, 200, grant);
    });
    const c = new RaftlockClient({ endpoints: [ep] });
    try {
      const g = await c.acquire('a', { waitMs: 5000 });
      assert.equal(g.fencingToken, 9);
      assert.equal(keys.length, 3);
      assert.equal(new Set(keys).size, 1, `one key for all attempts: ${keys.join(',')}`);
      assert.match(keys[0]!, /^[0-9a-f-]{36}$/);
      assert.equal(waits[0], 5000);
      assert.ok(waits[2]! < 5000 && waits[2]! > 4000, `later attempts wait less: ${waits.join(',')}`);
    } finally {
      await c.close();
    }
  });

  it('a 408 is no answer: the mutation is sent again with the same key, and the first answer it gets back is the result', async () => {
    // attempt 1: the server applies it, the answer is lost (504); attempt 2: the HTTP layer
    // times the request out (408, fastify's default body); attempt 3: the first answer
    const keys: string[] = [];
    const ep = await fake((req, res) => {
      keys.push(String(req.headers['idempotency-key']));
      if (keys.length === 1) return json(res, 504, { error: { code: 'timeout', message: 'unknown' } });
      if (keys.length === 2) return json(res, 408, { error: 'Request Timeout', message: 'Client Timeout', statusCode: 408 });
      json(res, 200, grant);
    });
    const c = new RaftlockClient({ endpoints: [ep] });
    try {
      const g = await c.acquire('a');
      assert.equal(g.fencingToken, 9, 'the grant of the first attempt, not an error');
      assert.equal(keys.length, 3);
      assert.equal(new Set(keys).size, 1);
    } finally {
      await c.close();
    }
  });

  it('408s until the budget runs out: OutcomeUnknownError after an attempt of unknown outcome, "unavailable" without one', async () => {
    let hits = 0;
    const ep = await fake((_q, res) => {
      hits++;
      if (hits === 1) return json(res, 504, { error: { code: 'timeout', message: 'unknown' } });
      json(res, 408, { error: 'Request Timeout', message: 'Client Timeout', statusCode: 408 });
    });
    const c = new RaftlockClient({ endpoints: [ep], retryBudgetMs: 300 });
    try {
      await assert.rejects(c.release('a', 's1', 3, { idempotencyKey: 'k-408' }), (e: unknown) => e instanceof OutcomeUnknownError && e.idempotencyKey === 'k-408');
      assert.ok(hits > 2, `sent again after the 408: ${hits} attempts`);
      await assert.rejects(c.getLock('a'), (e: unknown) => e instanceof UnavailableError && !(e instanceof OutcomeUnknownError));
    } finally {
      await c.close();
    }
  });

  it('gives OutcomeUnknownError (not "unavailable") when a mutation never gets a definite answer', async () => {
    const ep = await fake((_q, res) => json(res, 504, { error: { code: 'timeout', message: 'unknown' } }));
    const c = new RaftlockClient({ endpoints: [ep], retryBudgetMs: 300 });
    try {
      await assert.rejects(c.release('a', 's1', 3, { idempotencyKey: 'k-1' }), (e: unknown) => e instanceof OutcomeUnknownError && e.idempotencyKey === 'k-1' && /Idempotency-Key k-1/.test(e.message));
      // a read that times out is merely unavailable
      await assert.rejects(c.getLock('a'), (e: unknown) => e instanceof UnavailableError && !(e instanceof OutcomeUnknownError));
    } finally {
      await c.close();
    }
  });

  it('respects Retry-After: a single endpoint answering 503 is not hammered', async () => {
    const hits: number[] = [];
    const ep = await fake((_q, res) => {
      hits.push(Date.now());
      json(res, 503, { error: { code: 'unavailable', message: 'no leader' } }, { 'retry-after': '1' });
    });
    const c = new RaftlockClient({ endpoints: [ep], retryBudgetMs: 2500 });
    const t0 = Date.now();
    try {
      await assert.rejects(c.getLock('a'), (e: unknown) => e instanceof UnavailableError && e.message.includes('no leader'));
    } finally {
      await c.close();
    }
    assert.ok(hits.length >= 2 && hits.length <= 4, `hits: ${hits.length}`);
    for (let i = 1; i < hits.length; i++) assert.ok(hits[i]! - hits[i - 1]! >= 600, `gap ${hits[i]! - hits[i - 1]!} ms`);
    assert.ok(Date.now() - t0 < 4000);
  });

  it('does not retry definite answers (409, 404, 400) and types them', async () => {
    let hits = 0;
    const ep = await fake((req, res) => {
      hits++;
      if (req.url?.includes('acquire')) return json(res, 409, { error: { code: 'lock_held', message: 'held', holder: { session_id: 'x', owner: '', fencing_token: 4 } } });
      if (req.url?.includes('keepalive')) return json(res, 404, { error: { code: 'session_not_found', message: 'gone' } });
      return json(res, 400, { error: { code: 'invalid_request', message: 'query.limit: bad' } });
    });
    const c = new RaftlockClient({ endpoints: [ep] });
    try {
      await assert.rejects(c.acquire('a'), (e: unknown) => e instanceof LockHeldError && e.holder?.fencingToken === 4);
      await assert.rejects(c.keepalive('s1'), SessionNotFoundError);
      await assert.rejects(c.listLocks({ limit: 5 }), InvalidRequestError);
      assert.equal(hits, 3);
    } finally {
      await c.close();
    }
  });

  it('never retries 422 idempotency_key_reused, and names the refused key', async () => {
    let hits = 0;
    const ep = await fake((_q, res) => {
      hits++;
      json(res, 422, { error: { code: 'idempotency_key_reused', message: 'the Idempotency-Key was first used for another request (another name); nothing was applied' } });
    });
    const c = new RaftlockClient({ endpoints: [ep, ep] });
    try {
      await assert.rejects(c.acquire('b', { idempotencyKey: 'job-7' }), (e: unknown) => e instanceof IdempotencyKeyReusedError && e.idempotencyKey === 'job-7' && e.status === 422 && /another name/.test(e.message));
      await assert.rejects(c.release('b', 's1'), (e: unknown) => e instanceof IdempotencyKeyReusedError && typeof e.idempotencyKey === 'string', 'the key the SDK drew');
      assert.equal(hits, 2, 'one attempt each');
    } finally {
      await c.close();
    }
  });

  it('refuses a 200 whose body breaks the contract instead of inventing a token', async () => {
    const ep = await fake((_q, res) => json(res, 200, { name: 'a', session_id: 's', ttl_ms: 1 }));
    const c = new RaftlockClient({ endpoints: [ep] });
    try {
      await assert.rejects(c.acquire('a'), (e: unknown) => e instanceof RaftlockError && e.code === 'bad_response' && /fencing_token/.test(e.message));
    } finally {
      await c.close();
    }
  });

  it('acquireAll refuses an answer whose grants do not match the names asked for, one to one and in order', async () => {
    const answers = [
      { session_id: 's', ttl_ms: 1, grants: [{ name: 'b', fencing_token: 2 }, { name: 'a', fencing_token: 3 }] },
      { session_id: 's', ttl_ms: 1, grants: [{ name: 'a', fencing_token: 2 }] },
      { session_id: 's', ttl_ms: 1, grants: [{ name: 'a', fencing_token: 2 }, { name: 'b', fencing_token: 0 }] },
    ];
    let i = 0;
    const ep = await fake((_q, res) => json(res, 200, answers[i++ % answers.length]));
    const c = new RaftlockClient({ endpoints: [ep] });
    try {
      for (let k = 0; k < answers.length; k++) await assert.rejects(c.acquireAll(['a', 'b']), (e: unknown) => e instanceof RaftlockError && e.code === 'bad_response');
    } finally {
      await c.close();
    }
  });

  it('encodes a name as one path segment so "jobs/check" is never the check action', async () => {
    const urls: string[] = [];
    const ep = await fake((req, res) => {
      urls.push(req.url ?? '');
      json(res, 200, { name: 'jobs/check', held: false, waiters: 0 });
    });
    const c = new RaftlockClient({ endpoints: [ep] });
    try {
      await c.getLock('jobs/check');
      assert.deepEqual(urls, ['/v1/locks/jobs%2Fcheck']);
    } finally {
      await c.close();
    }
  });
});

describe('leader routing (fake servers)', () => {
  /** three fake nodes that name `leader()` in every answer, logging each request with its key */
  async function cluster(leader: () => string, answer: (ep: string, req: IncomingMessage, res: ServerResponse) => void = (_e, _q, res) => json(res, 200, grant)) {
    const hits: { ep: string; method: string; url: string; key: string | undefined }[] = [];
    const eps: string[] = [];
    for (let i = 0; i < 3; i++) {
      const ep = await fake((req, res) => {
        hits.push({ ep: eps[i]!, method: req.method ?? '', url: req.url ?? '', key: req.headers['idempotency-key'] as string | undefined });
        res.setHeader('x-raftlock-leader', leader());
        answer(eps[i]!, req, res);
      });
      eps.push(ep);
    }
    return { eps, hits };
  }
  const lock = { name: 'a', held: false, waiters: 0 };

  it('sends writes and linearizable reads to the leader the answers name; stale reads and the cluster view go anywhere', async () => {
    let leaderEp = '';
    const { eps, hits } = await cluster(() => leaderEp, (_e, req, res) => json(res, 200, req.url?.startsWith('/v1/locks/a/acquire') ? grant : req.url === '/v1/cluster' ? { node_id: 'n', role: 'follower', term: 1, leader_id: 'n2', commit_index: 1, applied_index: 1, members: [] } : lock));
    leaderEp = eps[1]!;
    const c = new RaftlockClient({ endpoints: eps, random: () => 0 });
    try {
      await c.acquire('a'); // the first call: wherever the rotation starts (a), which names the leader
      for (let i = 0; i < 4; i++) await c.acquire('a');
      await c.getLock('a');
      assert.deepEqual(hits.map((h) => h.ep), [eps[0], eps[1], eps[1], eps[1], eps[1], eps[1]], 'after the first answer, every write and linearizable read goes to the leader');
      hits.length = 0;
      for (let i = 0; i < 3; i++) await c.getLock('a', { consistency: 'stale' });
      await c.cluster();
      assert.equal(new Set(hits.map((h) => h.ep)).size, 3, `stale reads and the cluster view rotate: ${hits.map((h) => h.ep).join(' ')}`);
    } finally {
      await c.close();
    }
  });

  it('leaderRouting: false keeps the round-robin', async () => {
    const { eps, hits } = await cluster(() => eps[1]!);
    const c = new RaftlockClient({ endpoints: eps, random: () => 0, leaderRouting: false });
    try {
      for (let i = 0; i < 6; i++) await c.acquire('a');
      assert.deepEqual(hits.map((h) => h.ep), [...eps, ...eps]);
    } finally {
      await c.close();
    }
  });

  it('a hint naming an address that is not an endpoint is never contacted', async () => {
    const outsider = `http://127.0.0.1:${await freePort()}`;
    const { eps, hits } = await cluster(() => outsider);
    const c = new RaftlockClient({ endpoints: eps, random: () => 0 });
    try {
      for (let i = 0; i < 3; i++) await c.acquire('a');
      assert.deepEqual(hits.map((h) => h.ep), eps, 'the rotation, as without routing');
    } finally {
      await c.close();
    }
  });

  it('falls back to the other nodes when the leader fails, with the same Idempotency-Key, and follows the next leader named', async () => {
    let leaderEp = '';
    let failLeader = false;
    const { eps, hits } = await cluster(() => leaderEp, (ep, _q, res) => {
      // the old leader: its answer is lost (outcome unknown), and it names the new leader
      if (failLeader && ep === eps[1]) {
        leaderEp = eps[2]!;
        res.setHeader('x-raftlock-leader', leaderEp);
        return json(res, 504, { error: { code: 'timeout', message: 'unknown' } });
      }
      json(res, 200, grant);
    });
    leaderEp = eps[1]!;
    const c = new RaftlockClient({ endpoints: eps, random: () => 0 });
    try {
      await c.acquire('a');
      hits.length = 0;
      failLeader = true;
      const g = await c.acquire('a');
      assert.equal(g.fencingToken, 9);
      assert.deepEqual(hits.map((h) => h.ep), [eps[1], eps[2]], 'the retry went to the leader the failed answer named');
      assert.equal(hits[0]!.key, hits[1]!.key, 'one Idempotency-Key across the failover');
      await c.acquire('a');
      assert.equal(hits.at(-1)!.ep, eps[2], 'and stays with it');
    } finally {
      await c.close();
    }
  });

  it('a refused leader rests: calls go to the other nodes meanwhile', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const { eps, hits } = await cluster(() => dead);
    const c = new RaftlockClient({ endpoints: [...eps, dead], random: () => 0 });
    try {
      for (let i = 0; i < 4; i++) await c.acquire('a');
      assert.equal(hits.length, 4, 'every call answered by a live node');
      assert.ok(hits.every((h) => eps.includes(h.ep)));
    } finally {
      await c.close();
    }
  });
});

describe('list and read answers (fake server)', () => {
  it('listSemaphores, getSemaphore and listLocks send the list query and decode holders, waiters and modes; a broken body is bad_response', async () => {
    const urls: string[] = [];
    const sem = { name: 'db/pool', limit: 4, in_use: 3, holders: [{ session_id: 's1', owner: 'w', permits: 3, fencing_token: 9 }], waiters: [{ session_id: 's2', owner: '', permits: 2, position: 1 }] };
    const lock = { name: 'doc', held: true, waiters: 1, mode: 'shared', holders: [{ session_id: 's3', owner: 'r', fencing_token: 11, mode: 'shared' }, { session_id: 's4', owner: '', fencing_token: 12, mode: 'shared' }] };
    const ep = await fake((req, res) => {
      urls.push(req.url ?? '');
      if (req.url?.startsWith('/v1/semaphores?prefix=bad')) return json(res, 200, { semaphores: [{ name: 'x', limit: 1, in_use: 0, holders: 'no', waiters: [] }] });
      if (req.url?.startsWith('/v1/semaphores?')) return json(res, 200, { semaphores: [sem] });
      if (req.url?.startsWith('/v1/semaphores/')) return json(res, 200, sem);
      return json(res, 200, { locks: [lock] });
    });
    const c = new RaftlockClient({ endpoints: [ep] });
    try {
      const want = { name: 'db/pool', limit: 4, inUse: 3, holders: [{ sessionId: 's1', owner: 'w', permits: 3, fencingToken: 9 }], waiters: [{ sessionId: 's2', owner: '', permits: 2, position: 1 }] };
      assert.deepEqual(await c.listSemaphores({ prefix: 'db/', limit: 5, consistency: 'stale' }), [want]);
      assert.deepEqual(await c.getSemaphore('db/pool'), want);
      const [l] = await c.listLocks({ prefix: 'd' });
      assert.equal(l?.mode, 'shared');
      assert.deepEqual(l?.holders, [{ sessionId: 's3', owner: 'r', fencingToken: 11, mode: 'shared' }, { sessionId: 's4', owner: '', fencingToken: 12, mode: 'shared' }]);
      assert.equal(l?.holder, undefined);
      await assert.rejects(c.listSemaphores({ prefix: 'bad' }), (e: unknown) => e instanceof RaftlockError && e.code === 'bad_response' && /holders/.test(e.message));
      assert.deepEqual(urls, ['/v1/semaphores?prefix=db%2F&limit=5&consistency=stale', '/v1/semaphores/db%2Fpool', '/v1/locks?prefix=d', '/v1/semaphores?prefix=bad']);
    } finally {
      await c.close();
    }
  });
});

describe('Session lease proof (fake server)', () => {
  it('fires lost at lastAck + ttl − margin, before the server could expire the session', async () => {
    let answering = true;
    const ep = await fake((req, res) => {
      if (req.method === 'POST' && req.url === '/v1/sessions') return json(res, 201, { session_id: 's1', ttl_ms: 600 });
      if (req.url?.endsWith('/keepalive') && answering) return json(res, 200, { session_id: 's1', ttl_ms: 600 });
      if (req.method === 'DELETE') return json(res, 200, { released: [] });
      // swallowed: a stopped cluster never answers
    });
    const c = new RaftlockClient({ endpoints: [ep], timeoutMs: 5000 });
    try {
      const s = await c.session({ ttlMs: 600 });
      assert.equal(s.safetyMarginMs, 60);
      let acks = 0;
      s.on('keepalive', () => acks++);
      const deadline = Date.now() + 3000;
      while (acks < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.ok(acks >= 2, 'keepalives are acknowledged');
      answering = false;
      const lastAck = s.lastAckSentAt;
      const err = await s.lost;
      const lostAt = performance.now();
      assert.equal(err.code, 'session_lost');
      assert.ok(lostAt < lastAck + 600, `lost ${Math.round(lostAt - lastAck)} ms after the last acknowledged send (ttl 600)`);
      assert.ok(lostAt >= lastAck + 600 - 60 - 1, `not absurdly early: ${Math.round(lostAt - lastAck)} ms`);
      assert.ok(s.signal.aborted);
      await assert.rejects(s.lock('x'), /lease|lost|acknowledged/);
    } finally {
      await c.close();
    }
  });
});
