// Peer envelopes carry the sender's incarnation and cluster id (docs/membership.md,
// "Incarnations"): the incarnation reaches every message, the vote's `bind` and a
// snapshot conf's bindings survive the wire, and an envelope of another cluster id is
// refused with reason 'cluster' (which the transport counts as a rejected request).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeEnvelope, encodeEnvelope } from '../../src/transport/codec.js';
import type { Message } from '../../src/raft/core/types.js';

const opts = (clusterId?: string) => ({
  cluster: 'c', self: 'n2', knownPeers: new Set(['n1']), maxEntries: 100, maxBytes: 1 << 20,
  ...(clusterId !== undefined ? { clusterId: () => clusterId } : {}),
});

const vote: Message = { type: 'vote', from: 'n1', to: 'n2', term: 3, lastIndex: 4, lastTerm: 2, bind: 'b2', inc: 'a1' };

test('the incarnation and bind travel; a fresh receiver (no cluster id) accepts any', () => {
  const body = encodeEnvelope({ cluster: 'c', from: 'n1', to: 'n2', messages: [vote], clusterId: 'k1' });
  const r = decodeEnvelope(body, opts());
  assert.ok(r.ok);
  assert.deepEqual(r.messages, [vote]);
});

test('an envelope naming another cluster id is refused with reason cluster; none or the same passes', () => {
  const other = decodeEnvelope(encodeEnvelope({ cluster: 'c', from: 'n1', to: 'n2', messages: [vote], clusterId: 'k2' }), opts('k1'));
  assert.equal(other.ok, false);
  assert.equal(!other.ok && other.reason, 'cluster');
  assert.ok(decodeEnvelope(encodeEnvelope({ cluster: 'c', from: 'n1', to: 'n2', messages: [vote], clusterId: 'k1' }), opts('k1')).ok);
  assert.ok(decodeEnvelope(encodeEnvelope({ cluster: 'c', from: 'n1', to: 'n2', messages: [vote] }), opts('k1')).ok, 'a blank sender has no cluster id yet');
});

test('a snapshot conf keeps its bindings across the wire', () => {
  const snap: Message = {
    type: 'snapshot', from: 'n1', to: 'n2', term: 3, inc: 'a1',
    snapshot: { meta: { index: 9, term: 3, conf: { voters: ['n1', 'n2'], learners: [], incarnations: { n1: 'a1', n2: 'b2' }, clusterId: 'k1' } }, data: new Uint8Array([7]) },
  };
  const r = decodeEnvelope(encodeEnvelope({ cluster: 'c', from: 'n1', to: 'n2', messages: [snap] }), opts());
  assert.ok(r.ok);
  assert.deepEqual(r.messages, [snap]);
});
