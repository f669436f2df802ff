// The peer port is reachable by anything on the network. 1,000 hostile or broken requests
// must each be refused with a 4xx, counted, logged sparingly, and leave the transport
// delivering good messages exactly as before.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Packr } from 'msgpackr';
import { Pool } from 'undici';
import { seededRng, type Rng } from '../../src/raft/core/rng.js';
import { WIRE_VERSION, encodeEnvelope } from '../../src/transport/codec.js';
import { CONTENT_TYPE, MESSAGES_PATH, SNAPSHOT_PATH } from '../../src/transport/peer-server.js';
import { closeAll, hb, startNodes, waitFor } from './helpers.js';
import { seedFor } from './arbitraries.js';

const packr = new Packr({ useRecords: false, variableMapSize: true });
const framed = (v: unknown, version = WIRE_VERSION): Uint8Array => Buffer.concat([Buffer.from([version]), packr.pack(v)]);

function randomBytes(rng: Rng, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = rng.int(0, 256);
  return b;
}

type Req = { path: string; method: 'POST' | 'GET' | 'PUT'; body?: Uint8Array };

/** one garbage request of a random kind; every kind must be refused */
function garbage(rng: Rng, maxBodyBytes: number): Req {
  const good = encodeEnvelope({ cluster: 'test', from: 'n1', to: 'n2', messages: [hb('n1', 'n2', 1)] });
  const path = rng.next() < 0.8 ? MESSAGES_PATH : SNAPSHOT_PATH;
  switch (rng.int(0, 12)) {
    case 0: return { path, method: 'POST', body: randomBytes(rng, rng.int(0, 3000)) };
    case 1: return { path, method: 'POST', body: Buffer.concat([Buffer.from([WIRE_VERSION]), randomBytes(rng, rng.int(1, 500))]) };
    case 2: return { path, method: 'POST', body: good.subarray(0, rng.int(0, good.length - 1)) }; // truncated
    case 3: { const b = good.slice(); b[0] = rng.int(2, 256); return { path, method: 'POST', body: b }; } // version
    case 4: return { path, method: 'POST', body: framed({ cluster: 'evil', from: 'n1', to: 'n2', messages: [] }) };
    case 5: return { path, method: 'POST', body: framed({ cluster: 'test', from: `x${rng.int(0, 1e6)}`, to: 'n2', messages: [] }) };
    case 6: return { path: MESSAGES_PATH, method: 'POST', body: framed({ cluster: 'test', from: 'n1', to: 'n2', messages: [{ type: 'heartbeat', term: -rng.int(1, 1e9), commit: 0, ctx: 0 }] }) };
    case 7: return { path: MESSAGES_PATH, method: 'POST', body: framed({ cluster: 'test', from: 'n1', to: 'n2', messages: [{ type: 'append', term: 2, prevIndex: 1, prevTerm: 1, commit: 0, entries: [{ index: 2, term: 2, kind: 'normal', data: 'not bytes' }] }] }) };
    case 8: return { path: MESSAGES_PATH, method: 'POST', body: framed({ cluster: 'test', from: 'n1', to: 'n2', messages: [{ type: 'heartbeat', term: 2 ** 60, commit: 1.5, ctx: 0 }] }) };
    case 9: return { path: `/${rng.int(0, 1000)}`, method: 'POST', body: good };
    case 10: return { path, method: rng.next() < 0.5 ? 'GET' : 'PUT', ...(rng.next() < 0.5 ? { body: good } : {}) };
    default: return { path, method: 'POST', body: randomBytes(rng, maxBodyBytes + rng.int(1, 10_000)) }; // too large
  }
}

describe('garbage on the peer port', () => {
  it('refuses 1,000 bad requests and still delivers good messages afterwards', async () => {
    const seed = seedFor('peer port garbage');
    const rng = seededRng(seed);
    const maxBodyBytes = 32 * 1024;
    const nodes = await startNodes(['n1', 'n2'], { maxBodyBytes, snapshotChunkBytes: 16 * 1024 });
    const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
    const pool = new Pool(b.url, { connections: 8 });
    try {
      a.t.send([hb('n1', 'n2', 100)]);
      await waitFor(() => b.inbox.length === 1, 'delivery before the garbage');

      const statuses = new Map<number, number>();
      const N = 1000;
      for (let i = 0; i < N; i += 50) {
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            const r = garbage(rng, maxBodyBytes);
            let status: number;
            try {
              const res = await pool.request({ path: r.path, method: r.method, body: r.body ?? null, headers: { 'content-type': CONTENT_TYPE } });
              await res.body.dump();
              status = res.statusCode;
            } catch (err) {
              // an oversized body may be cut off by the server's 413 + close while still
              // being written; the refusal is then seen as a reset by the sender
              assert.ok(r.body && r.body.length > maxBodyBytes, `unexpected error ${String(err)} for ${r.method} ${r.path}`);
              status = 413;
            }
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
          }),
        );
      }
      for (const s of statuses.keys()) assert.ok([400, 403, 404, 405, 409, 413].includes(s), `status ${s} (seed ${seed})`);
      const rejected = Object.values(b.t.stats().rejected).reduce((x, y) => x + y, 0);
      assert.equal(rejected, N, `every request counted as rejected: ${JSON.stringify(b.t.stats().rejected)}`);
      assert.equal(b.inbox.length, 1, 'nothing from the garbage was delivered');
      // logging is rate-limited per remote address: one line for all of it
      assert.equal(b.log.lines.filter((l) => l.msg === 'peer request rejected').length, 1);

      // non-HTTP bytes straight into the socket
      for (let i = 0; i < 20; i++) {
        await new Promise<void>((resolve) => {
          const s = connect(Number(new URL(b.url).port), '127.0.0.1', () => s.end(Buffer.from(randomBytes(rng, rng.int(1, 2000)))));
          s.on('error', () => resolve());
          s.on('close', () => resolve());
          s.resume();
        });
      }

      for (let i = 0; i < 10; i++) a.t.send([hb('n1', 'n2', 101 + i)]);
      await waitFor(() => b.inbox.length === 11, 'delivery after the garbage');
      assert.deepEqual(b.inbox.map((m) => (m.type === 'heartbeat' ? m.ctx : -1)), Array.from({ length: 11 }, (_, i) => 100 + i));
      b.t.send([hb('n2', 'n1', 7)]);
      await waitFor(() => a.inbox.length === 1, 'and the other way');
    } finally {
      await pool.destroy();
      await closeAll(nodes);
    }
  });
});
