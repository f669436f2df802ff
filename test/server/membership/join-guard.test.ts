// The join guard (src/server/membership/join-guard.ts) wraps the node's transport. A wrapper that drops
// one of the Transport's calls fails silently: without flush, the driver's flush after a
// leader's appends (src/raft/driver.ts, "appends before the own save") did nothing, and
// every append waited a loop turn behind the leader's save (BENCHMARKS.md "Third round").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { guardEmptyLog } from '../../../src/server/membership/join-guard.js';
import type { Message } from '../../../src/raft/core/types.js';
import type { Transport } from '../../../src/raft/seams.js';

function recordingTransport(): { inner: Transport; calls: string[]; deliver: (m: Message) => void } {
  const calls: string[] = [];
  let handler: (m: Message) => void = () => undefined;
  const inner: Transport = {
    send: () => void calls.push('send'),
    flush: () => void calls.push('flush'),
    onMessage: (h) => {
      calls.push('onMessage');
      handler = h;
    },
    onUnreachable: () => void calls.push('onUnreachable'),
    onSnapshotStatus: () => void calls.push('onSnapshotStatus'),
    setPeers: () => void calls.push('setPeers'),
    close: async () => void calls.push('close'),
  };
  return { inner, calls, deliver: (m) => handler(m) };
}

test('guardEmptyLog forwards every Transport call to the transport it wraps, flush included', async () => {
  const { inner, calls } = recordingTransport();
  const g = guardEmptyLog(inner, () => true, () => assert.fail('nothing to drop'));
  g.send([]);
  g.flush();
  g.onMessage(() => undefined);
  g.onUnreachable(() => undefined);
  g.onSnapshotStatus(() => undefined);
  g.setPeers(new Map());
  await g.close();
  assert.deepEqual(calls, ['send', 'flush', 'onMessage', 'onUnreachable', 'onSnapshotStatus', 'setPeers', 'close']);
  // every method of the wrapped transport has its forwarder (a new one added to Transport
  // and forgotten here would be undefined on the wrapper)
  for (const k of Object.keys(inner)) assert.equal(typeof (g as unknown as Record<string, unknown>)[k], 'function', `guardEmptyLog forwards ${k}`);
});

test('guardEmptyLog drops appends from index 1 until the node is bootstrapped, and only those', () => {
  const { inner, deliver } = recordingTransport();
  let bootstrapped = false;
  const dropped: Message[] = [];
  const got: Message[] = [];
  const g = guardEmptyLog(inner, () => bootstrapped, (m) => dropped.push(m));
  g.onMessage((m) => got.push(m));
  const fromOne = { type: 'append', from: 'a', to: 'b', term: 1, prevIndex: 0, prevTerm: 0, entries: [{ index: 1, term: 1, type: 'normal', data: new Uint8Array() }], commit: 0 } as unknown as Message;
  const heartbeat = { ...fromOne, entries: [] } as unknown as Message;
  deliver(fromOne);
  deliver(heartbeat);
  assert.deepEqual([dropped.length, got.length], [1, 1]);
  bootstrapped = true;
  deliver(fromOne);
  assert.deepEqual([dropped.length, got.length], [1, 2]);
});
