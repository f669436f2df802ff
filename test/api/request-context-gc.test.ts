// onLeader's RequestContext must not keep its request alive past a scavenge
// (routes/context.ts LeaderRequestContext; BENCHMARKS.md "Tenth round"). The probe runs in
// a child with --expose-gc and measures requests going through onLeader, and the object
// literal with a getter it made before (the control: it must keep the requests, or the
// probe measures nothing). eslint.config.js forbids an accessor in an object literal in
// src/ as well.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runHeapProbe } from '../support/heap-probe.js';

test('a request context lets its request die young; a getter in an object literal does not', () => {
  const { result: r, line: out } = runHeapProbe<{ requests: number; literal: number; leader: number }>(new URL('./request-context-gc-probe.js', import.meta.url));
  // each request holds a 4,096-element array: ~32 KiB, so all of them are ~16 MiB
  const all = r.requests * 32 * 1024;
  assert.ok(r.literal > all * 0.75, `the control should keep its requests through two scavenges, kept ${r.literal} B of ~${all}: the probe no longer measures what it should (${out})`);
  assert.ok(r.leader < all * 0.25, `requests through onLeader kept ${r.leader} B of ~${all} B of dead requests through two scavenges (${out})`);
});
