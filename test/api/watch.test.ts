// GET /v1/watch against a real WatchHub fed by a real LockFsm (docs/contract.md §4 "Watch"):
// SSE framing, the state opening and its id-only marker, the prefix filter, resumption by
// from_index and Last-Event-ID, 410 compacted, 429 at max_watch_streams, a slow reader cut
// off, shutdown ending the streams. Streams are read over a real socket.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { WatchHub } from '../../src/server/watch/watch-hub.js';
import { currentHolders } from '../../src/server/watch/watch-state.js';
import type { ApplyOutput, Command } from '../../src/lock-fsm/index.js';
import { Log } from '../lock-fsm/helpers.js';
import { assertError, makeApp } from './helpers.js';
import { ApiError } from '../../src/api/errors.js';
import type { Authorizer } from '../../src/api/routes/context.js';
import { openSse as open, sseFrames as frames } from '../support/sse.js';

interface Fixture { app: FastifyInstance; hub: WatchHub; log: Log; base: string; run(cmd: Command): ApplyOutput }

async function fixture(o: { retained?: number; maxStreams?: number; bufferBytes?: number; authorize?: Authorizer } = {}): Promise<Fixture> {
  const log = new Log();
  const hub = new WatchHub({ retained: o.retained ?? 1000, maxStreams: o.maxStreams ?? 10, appliedIndex: 0, holders: (p) => currentHolders(log.fsm, p) });
  const { app } = makeApp({ watch: hub, ...(o.bufferBytes !== undefined ? { watchStreamBufferBytes: o.bufferBytes } : {}), ...(o.authorize ? { authorize: o.authorize } : {}) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address() as { port: number };
  const run = (cmd: Command): ApplyOutput => {
    const out = log.run(cmd);
    hub.onApplied(log.index, out);
    return out;
  };
  return { app, hub, log, base: `http://127.0.0.1:${addr.port}`, run };
}

async function json(url: string, headers: Record<string, string> = {}): Promise<{ statusCode: number; body: string; headers: Record<string, unknown> }> {
  const r = await fetch(url, { headers });
  return { statusCode: r.status, body: await r.text(), headers: Object.fromEntries(r.headers) };
}

describe('GET /v1/watch', () => {
  const closers: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const c of closers) await c();
  });

  it('opens with one state per holder under the prefix and an id-only marker, then streams events in log order', async () => {
    const f = await fixture();
    closers.push(() => f.app.close());
    for (const s of ['s1', 's2', 's3']) f.run({ kind: 'openSession', sessionId: s, ttlMs: 10_000, owner: s, lockDelayMs: 0 });
    f.run({ kind: 'acquire', name: 'a/x', sessionId: 's1', waitMs: 0 });
    f.run({ kind: 'semAcquire', name: 'a/sem', sessionId: 's2', limit: 3, permits: 2, waitMs: 0 });
    f.run({ kind: 'acquire', name: 'b/y', sessionId: 's3', waitMs: 0 });
    const at = f.log.index;
    const st = await open(`${f.base}/v1/watch?prefix=a/`);
    assert.equal(st.status, 200);
    assert.match(String(st.headers['content-type']), /^text\/event-stream/);
    await st.until(`id: ${at}\n\n`);
    assert.deepEqual(frames(st.text()), [
      { event: 'state', data: { kind: 'lock', name: 'a/x', session_id: 's1', fencing_token: 4, mode: 'exclusive', index: at } },
      { event: 'state', data: { kind: 'semaphore', name: 'a/sem', session_id: 's2', fencing_token: 5, permits: 2, limit: 3, index: at } },
      { id: String(at) },
    ]);
    // a waiter queues, the holder releases: released, then acquired — one index, together
    f.run({ kind: 'acquire', name: 'a/x', sessionId: 's3', waitMs: 5000 });
    f.run({ kind: 'acquire', name: 'b/z', sessionId: 's3', waitMs: 0 }); // not under a/
    f.run({ kind: 'release', name: 'a/x', sessionId: 's1' });
    const rel = f.log.index;
    f.run({ kind: 'semSetLimit', name: 'a/sem', limit: 5 });
    f.run({ kind: 'expireSession', sessionId: 's2' });
    await st.until(`id: ${f.log.index}\nevent: expired`);
    assert.deepEqual(frames(st.text()).slice(3), [
      { id: String(at + 1), event: 'waiting', data: { kind: 'lock', name: 'a/x', session_id: 's3', mode: 'exclusive', index: at + 1 } },
      { id: String(rel), event: 'released', data: { kind: 'lock', name: 'a/x', session_id: 's1', fencing_token: 4, mode: 'exclusive', index: rel } },
      { id: String(rel), event: 'acquired', data: { kind: 'lock', name: 'a/x', session_id: 's3', fencing_token: rel, mode: 'exclusive', index: rel } },
      { id: String(rel + 1), event: 'limit', data: { kind: 'semaphore', name: 'a/sem', limit: 5, index: rel + 1 } },
      { id: String(rel + 2), event: 'expired', data: { kind: 'semaphore', name: 'a/sem', session_id: 's2', fencing_token: 5, permits: 2, reason: 'session_expired', index: rel + 2 } },
    ]);
    st.close();
  });

  it('resumes after from_index or Last-Event-ID with exactly the later events; 410 compacted once they are gone', async () => {
    const f = await fixture({ retained: 4 });
    closers.push(() => f.app.close());
    f.run({ kind: 'openSession', sessionId: 's1', ttlMs: 10_000, owner: 'o', lockDelayMs: 0 });
    for (const n of ['k1', 'k2']) f.run({ kind: 'acquire', name: n, sessionId: 's1', waitMs: 0 });
    const mid = f.log.index; // k2's grant
    f.run({ kind: 'release', name: 'k1', sessionId: 's1' });
    const a = await open(`${f.base}/v1/watch?from_index=${mid - 1}`);
    await a.until(`id: ${mid + 1}\n`);
    assert.deepEqual(frames(a.text()).map((e) => `${e.id} ${e.event} ${String(e.data?.name)}`), [`${mid} acquired k2`, `${mid + 1} released k1`]);
    a.close();
    const b = await open(`${f.base}/v1/watch`, { 'last-event-id': String(mid) });
    await b.until(`id: ${mid + 1}\n`);
    assert.deepEqual(frames(b.text()).map((e) => e.id), [String(mid + 1)], 'Last-Event-ID: after that index, no state opening');
    b.close();
    // beyond the window: the first events are evicted (whole index groups)
    for (const n of ['k3', 'k4', 'k5', 'k6']) f.run({ kind: 'acquire', name: n, sessionId: 's1', waitMs: 0 });
    const gone = assertError(await json(`${f.base}/v1/watch?from_index=${mid - 1}`), 410, 'compacted');
    assert.equal(typeof gone.compacted_index, 'number');
    assert.ok(f.hub.floor >= mid);
    // at the floor itself a resume is still complete
    const c = await open(`${f.base}/v1/watch?from_index=${f.hub.floor}`);
    assert.equal(c.status, 200);
    c.close();
    assertError(await json(`${f.base}/v1/watch?from_index=x`), 400, 'invalid_request');
    assertError(await json(`${f.base}/v1/watch`, { 'last-event-id': '-3' }), 400, 'invalid_request', 'last-event-id');
    assertError(await json(`${f.base}/v1/watch?prefix=bad%20name`), 400, 'invalid_request', 'prefix');
  });

  it('429 beyond max_watch_streams; a closed stream frees its place', async () => {
    const f = await fixture({ maxStreams: 1 });
    closers.push(() => f.app.close());
    const a = await open(`${f.base}/v1/watch`);
    assert.equal(f.hub.streamCount, 1);
    assertError(await json(`${f.base}/v1/watch`), 429, 'too_many_requests', 'max_watch_streams');
    a.close();
    await a.ended;
    const deadline = Date.now() + 3000;
    while (f.hub.streamCount > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(f.hub.streamCount, 0);
    const b = await open(`${f.base}/v1/watch`);
    assert.equal(b.status, 200);
    b.close();
  });

  it('a reader that stops reading is cut off once its unsent bytes pass the bound', async () => {
    const f = await fixture({ bufferBytes: 64 * 1024 });
    closers.push(() => f.app.close());
    const st = await open(`${f.base}/v1/watch`);
    await st.until(/id: 0\n\n/);
    st.res.pause(); // no more reads: the socket buffers fill up
    const big = 'x'.repeat(200);
    for (let i = 1; i <= 200 && f.hub.streamCount > 0; i++) {
      const events = Array.from({ length: 500 }, (_, k) => ({ type: 'granted' as const, name: `${big}${k}`, sessionId: 's', fencingToken: i * 1000 + k }));
      f.hub.onApplied(i, { result: { ok: true, kind: 'noop' }, events });
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(f.hub.streamCount, 0, 'the slow stream was cut off');
    st.close();
  });

  it('needs the read right on the prefix, as a list does', async () => {
    const asked: string[] = [];
    const f = await fixture({
      authorize: ({ right, name }) => {
        asked.push(`${right} ${name ?? ''}`);
        if (!(name ?? '').startsWith('billing/')) throw new ApiError('permission_denied', 'no right');
        return 'billing';
      },
    });
    closers.push(() => f.app.close());
    assertError(await json(`${f.base}/v1/watch`), 403, 'permission_denied');
    const ok = await open(`${f.base}/v1/watch?prefix=billing/`);
    assert.equal(ok.status, 200);
    ok.close();
    assert.deepEqual(asked, ['read ', 'read billing/']);
  });

  it('shutdown ends open streams, and the server closes', async () => {
    const f = await fixture();
    const st = await open(`${f.base}/v1/watch`);
    await st.until('id: 0');
    const t0 = Date.now();
    await f.app.close();
    await st.ended;
    assert.ok(Date.now() - t0 < 3000, 'close did not wait for the stream');
  });
});
