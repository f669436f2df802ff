// Unit tests for the transport's small parts: the bounded queue, the snapshot
// assembler, the log limiter.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Message } from '../../src/raft/core/types.js';
import { PeerQueue, estimateSize } from '../../src/transport/peer-queue.js';
import { SnapshotAssembler } from '../../src/transport/snapshot-transfer.js';
import { LogLimiter } from '../../src/transport/log-limiter.js';
import type { SnapshotChunk } from '../../src/transport/codec.js';
import { captureLogger, hb, waitFor } from './helpers.js';

const ctxOf = (m: Message): number => (m.type === 'heartbeat' ? m.ctx : -1);

describe('PeerQueue', () => {
  it('drops the oldest when over the message bound, and says how many', () => {
    const q = new PeerQueue(3, 1e9);
    assert.equal(q.push(hb('a', 'b', 1), 10), 0);
    assert.equal(q.push(hb('a', 'b', 2), 10), 0);
    assert.equal(q.push(hb('a', 'b', 3), 10), 0);
    assert.equal(q.push(hb('a', 'b', 4), 10), 1);
    assert.equal(q.length, 3);
    assert.deepEqual(q.take(10, 1e9).map(ctxOf), [2, 3, 4]);
    assert.equal(q.length, 0);
    assert.equal(q.bytes, 0);
  });

  it('drops the oldest when over the byte bound, but never the message just pushed', () => {
    const q = new PeerQueue(100, 100);
    q.push(hb('a', 'b', 1), 40);
    q.push(hb('a', 'b', 2), 40);
    assert.equal(q.push(hb('a', 'b', 3), 40), 1);
    assert.equal(q.bytes, 80);
    assert.equal(q.push(hb('a', 'b', 4), 500), 2, 'a single oversized message displaces everything');
    assert.deepEqual(q.take(10, 1e9).map(ctxOf), [4]);
  });

  it('take respects count and byte limits but always takes at least one', () => {
    const q = new PeerQueue(100, 1e9);
    for (let i = 0; i < 10; i++) q.push(hb('a', 'b', i), 30);
    assert.deepEqual(q.take(3, 1e9).map(ctxOf), [0, 1, 2]);
    assert.deepEqual(q.take(10, 65).map(ctxOf), [3, 4]);
    assert.deepEqual(q.take(10, 1).map(ctxOf), [5]);
    assert.equal(q.clear(), 4);
    assert.deepEqual(q.take(10, 1e9), []);
  });

  it('stays O(live) in memory and FIFO across long use', () => {
    const q = new PeerQueue(50, 1e9);
    let next = 0;
    let expect = 0;
    for (let round = 0; round < 2000; round++) {
      for (let i = 0; i < 7; i++) {
        const dropped = q.push(hb('a', 'b', next++), 1);
        expect += dropped;
      }
      for (const m of q.take(5, 1e9)) assert.equal(ctxOf(m), expect++);
      assert.ok(q.length <= 50);
    }
    const internal = (q as unknown as { items: unknown[] }).items.length;
    assert.ok(internal <= 2 * 1024 + 50, `backing array ${internal}`);
  });

  it('estimates sizes generously for entries', () => {
    const m: Message = { from: 'a', to: 'b', term: 1, type: 'append', prevIndex: 0, prevTerm: 0, commit: 0, entries: [{ index: 1, term: 1, kind: 'normal', data: new Uint8Array(1000) }] };
    assert.ok(estimateSize(m) >= 1000 + 60);
    assert.ok(estimateSize(hb('a', 'b', 1)) > 0);
  });
});

describe('SnapshotAssembler', () => {
  const meta = { index: 9, term: 2, conf: { voters: ['n1', 'n2'], learners: [] } };
  const chunk = (over: Partial<SnapshotChunk>): SnapshotChunk => ({ cluster: 't', from: 'n2', to: 'n1', transfer: 'x1', offset: 0, total: 6, term: 3, meta, chunk: new Uint8Array([1, 2, 3]), ...over });

  it('assembles in-order chunks into one snapshot message', () => {
    const a = new SnapshotAssembler(10_000, captureLogger());
    const r1 = a.accept(chunk({}));
    assert.equal(r1.verdict.status, 204);
    assert.equal(r1.message, undefined);
    const r2 = a.accept(chunk({ offset: 3, chunk: new Uint8Array([4, 5, 6]) }));
    assert.deepStrictEqual(r2.message, { type: 'snapshot', from: 'n2', to: 'n1', term: 3, snapshot: { meta, data: new Uint8Array([1, 2, 3, 4, 5, 6]) } });
    assert.equal(a.pending, 0);
  });

  it('refuses out-of-order, foreign or inconsistent chunks and forgets the transfer', () => {
    const cases: [string, Partial<SnapshotChunk>][] = [
      ['skipped offset', { offset: 4, chunk: new Uint8Array([5, 6]) }],
      ['offset inside received data', { offset: 1, chunk: new Uint8Array([2]) }],
      ['other transfer', { transfer: 'x2', offset: 3 }],
      ['total changed', { offset: 3, total: 7 }],
      ['term changed', { offset: 3, term: 4 }],
      ['meta changed', { offset: 3, meta: { ...meta, index: 10 } }],
    ];
    for (const [name, over] of cases) {
      const a = new SnapshotAssembler(10_000, captureLogger());
      a.accept(chunk({}));
      const r = a.accept(chunk(over));
      assert.equal(r.verdict.status, 409, name);
      assert.equal(r.message, undefined, name);
      assert.equal(a.pending, 0, `${name}: partial transfer discarded`);
      a.close();
    }
    const a = new SnapshotAssembler(10_000, captureLogger());
    assert.equal(a.accept(chunk({ offset: 3 })).verdict.status, 409, 'no transfer in progress');
  });

  it('a new transfer from the same peer supersedes the half-received one', () => {
    const log = captureLogger();
    const a = new SnapshotAssembler(10_000, log);
    a.accept(chunk({}));
    assert.ok(a.accept(chunk({ transfer: 'x2', total: 3 })).message, 'the new, one-chunk transfer completes');
    assert.equal(a.pending, 0);
    assert.ok(log.lines.some((l) => l.msg === 'discarded a partial snapshot'));
    // peers are independent
    a.accept(chunk({ from: 'n2' }));
    a.accept(chunk({ from: 'n3' }));
    assert.equal(a.pending, 2);
    a.close();
    assert.equal(a.pending, 0);
  });

  it('discards a transfer that goes quiet', async () => {
    const log = captureLogger();
    const a = new SnapshotAssembler(30, log);
    a.accept(chunk({}));
    assert.equal(a.pending, 1);
    await waitFor(() => a.pending === 0, 'timeout discard', 2_000);
    assert.equal(a.accept(chunk({ offset: 3 })).verdict.status, 409);
  });
});

describe('LogLimiter', () => {
  it('lets one line per key per interval through and counts the rest', () => {
    let now = 0;
    const l = new LogLimiter(1000, () => now);
    assert.equal(l.allow('a'), 0);
    assert.equal(l.allow('a'), null);
    assert.equal(l.allow('b'), 0);
    now = 999;
    assert.equal(l.allow('a'), null);
    now = 1000;
    assert.equal(l.allow('a'), 2);
  });

  it('bounds its key table', () => {
    const l = new LogLimiter(1000, () => 0, 10);
    for (let i = 0; i < 1000; i++) l.allow(`k${i}`);
    assert.ok((l as unknown as { last: Map<string, unknown> }).last.size <= 10);
  });
});
