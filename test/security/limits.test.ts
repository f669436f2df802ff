// Limits that protect a node (docs/security.md "Limits"): request rate per client address →
// 429 with Retry-After (and the node stays healthy), forwarded requests from members not
// counted twice, and slowloris: a client that trickles its headers loses its socket at the
// headers deadline (10 s), on the API and on the peer port.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ClientRateLimiter } from '../../src/security/rate-limit.js';
import { buildServer } from '../../src/api/server.js';
import { Metrics } from '../../src/metrics.js';
import { HttpTransport } from '../../src/transport/http-transport.js';
import { FakeService } from '../api/fake-service.js';
import { assertError, LIMITS } from '../api/helpers.js';
import { captureLogger } from '../transport/helpers.js';
import { securedApp, tempDir } from './helpers.js';

describe('ClientRateLimiter', () => {
  it('allows a burst of one second\'s worth, then refills at the rate', () => {
    let now = 0;
    const l = new ClientRateLimiter(10, () => now);
    for (let i = 0; i < 10; i++) assert.equal(l.take('a').ok, true, `request ${i}`);
    assert.deepEqual(l.take('a'), { ok: false, retryAfterS: 1 });
    assert.equal(l.take('b').ok, true, 'clients have their own buckets');
    now += 100; // one token back
    assert.equal(l.take('a').ok, true);
    assert.equal(l.take('a').ok, false);
    now += 10_000; // never more than the burst
    for (let i = 0; i < 10; i++) assert.equal(l.take('a').ok, true);
    assert.equal(l.take('a').ok, false);
  });
  it('Retry-After is the time to the next token (≥ 1 s)', () => {
    const l = new ClientRateLimiter(1, () => 0);
    assert.equal(l.take('a').ok, true);
    assert.deepEqual(l.take('a'), { ok: false, retryAfterS: 1 });
  });
  it('keeps at most maxClients buckets (least recently seen go first)', () => {
    const l = new ClientRateLimiter(1, () => 0, 3);
    for (const c of ['a', 'b', 'c', 'd']) l.take(c);
    assert.equal(l.clients, 3);
    assert.equal(l.take('a').ok, true, 'a was evicted: a fresh bucket');
    assert.equal(l.take('d').ok, false, 'd is still remembered');
  });
  it('refuses a nonsense rate', () => {
    assert.throws(() => new ClientRateLimiter(0, () => 0), /positive integer/);
  });
});

describe('requests_per_second_per_client on the REST server', () => {
  const tmp = tempDir('limits');
  let app: FastifyInstance;
  let metrics: Metrics;
  let now = 1_000_000;
  before(async () => {
    ({ app, metrics } = await securedApp(tmp.dir, { limits: { requests_per_second_per_client: 5 } }, () => now));
  });
  after(async () => {
    await app.close();
    tmp.cleanup();
  });

  it('429 too_many_requests with Retry-After past the rate; health checks and other clients unaffected', async () => {
    const get = (remoteAddress: string, url = '/v1/locks/a', headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, remoteAddress, headers });
    for (let i = 0; i < 5; i++) assert.equal((await get('10.0.0.1')).statusCode, 200);
    const r = await get('10.0.0.1');
    assertError(r, 429, 'too_many_requests', 'requests_per_second_per_client');
    assert.equal(r.headers['retry-after'], '1');
    // a flood does not hurt anyone else, nor the node
    for (let i = 0; i < 200; i++) assert.equal((await get('10.0.0.1', '/v1/sessions', { 'content-type': 'application/json' })).statusCode, 429);
    assert.equal((await get('10.0.0.2')).statusCode, 200, 'another client');
    assert.equal((await get('10.0.0.1', '/healthz')).statusCode, 200);
    assert.equal((await get('10.0.0.1', '/readyz')).statusCode, 200);
    // forwarded by a member (127.0.0.1 is n1's address in this file): counted at the entry node only
    for (let i = 0; i < 10; i++) assert.equal((await get('127.0.0.1', '/v1/locks/a', { 'x-raftlock-forwarded': 'n2' })).statusCode, 200);
    // the header alone from a non-member proves nothing
    assert.equal((await get('10.0.0.1', '/v1/locks/a', { 'x-raftlock-forwarded': 'n2' })).statusCode, 429);
    now += 1000;
    assert.equal((await get('10.0.0.1')).statusCode, 200, 'the bucket refilled');
    const scraped = (await metrics.scrape()).body;
    assert.match(scraped, /raftlock_api_rate_limited_total (\d+)/);
    assert.ok(Number(/raftlock_api_rate_limited_total (\d+)/.exec(scraped)?.[1]) >= 202);
  });
});

/** Opens a socket and writes an HTTP request head one byte every 400 ms, never finishing.
 *  Resolves with how long the server kept the socket open. */
function slowloris(port: number, giveUpMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const s = connect(port, '127.0.0.1');
    const head = `POST /v1/sessions HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(200)}`;
    let i = 0;
    const drip = setInterval(() => {
      if (!s.destroyed) s.write(head[i++ % head.length] as string);
    }, 400);
    const giveUp = setTimeout(() => {
      s.destroy();
      reject(new Error(`the server kept a slowloris socket open for ${giveUpMs} ms`));
    }, giveUpMs);
    s.on('error', () => undefined);
    s.resume(); // read (and drop) the server's 408/400, or 'close' never comes
    s.on('close', () => {
      clearInterval(drip);
      clearTimeout(giveUp);
      resolve(Date.now() - t0);
    });
  });
}

describe('slowloris', () => {
  it('the API closes a socket whose headers trickle in, at the 10 s headers deadline; so does the peer port', async () => {
    const app = buildServer({ service: new FakeService(), nodeId: 'n1', metrics: new Metrics({ defaultMetrics: false }), limits: LIMITS, logger: false });
    const t = new HttpTransport({ self: 'n1', cluster: 'test', listen: { host: '127.0.0.1', port: 0 }, peers: new Map(), logger: captureLogger() });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      await t.start();
      const apiPort = (app.server.address() as { port: number }).port;
      const [api, peer] = await Promise.all([slowloris(apiPort, 14_000), slowloris(t.address().port, 14_000)]);
      assert.ok(api >= 9_000 && api < 12_500, `API socket lived ${api} ms`);
      assert.ok(peer >= 9_000 && peer < 12_500, `peer socket lived ${peer} ms`);
      // and the server still serves
      const r = await app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(r.statusCode, 200);
    } finally {
      await app.close();
      await t.close();
    }
  });
});
