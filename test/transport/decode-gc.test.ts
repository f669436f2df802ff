// Decoding a peer envelope must leave nothing behind in the heap (wire-validate.ts
// message; BENCHMARKS.md "Tenth round"): on Node 20 a leading spread followed by new
// fields made a hidden class per message in the old generation. The probe runs in a child
// with --expose-gc; its control builds objects the old way and must leave them behind, or
// the probe no longer measures what this test is about.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runHeapProbe } from '../support/heap-probe.js';

test('a decoded peer envelope leaves nothing in the heap after two scavenges', () => {
  const { result: r, line: out } = runHeapProbe<{ calls: number; decode: number; spreadFirst: number }>(new URL('./decode-gc-probe.js', import.meta.url));
  assert.ok(r.spreadFirst >= 200, `the control (a leading spread, then new fields) should leave ~400 B per call on this Node, left ${r.spreadFirst}: if V8 no longer does, the lint rule in eslint.config.js can go (${out})`);
  assert.ok(r.decode < 50, `decoding one envelope of two messages left ${r.decode} B per envelope in the heap (${out})`);
});
