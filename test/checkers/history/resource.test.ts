// resource.ts on small hand-written histories: it must accept a correct history and name
// the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkResource } from './resource.js';
import type { ResourceLogEntry } from './resource-logs.js';

test('resource: stale tokens accepted and lost updates are violations with fencing, counted without', () => {
  const e = (seq: number, op: 'read' | 'write', token: number, accepted: boolean, before: number, extra: Partial<ResourceLogEntry> = {}): ResourceLogEntry => ({ seq, t: seq, op, lock: 'L', token, accepted, before, highest: 0, ...extra });
  const clean = [e(0, 'read', 5, true, 0), e(1, 'write', 5, true, 0, { value: 1, read: 0, lost: false }), e(2, 'write', 4, false, 1, { value: 9, read: 0 })];
  const r = checkResource(clean, true);
  assert.equal(r.violations.length, 0);
  assert.equal(r.rejected, 1);
  const lost = [e(0, 'write', 6, true, 0, { value: 1, read: 0, lost: false }), e(1, 'write', 5, true, 1, { value: 1, read: 0, lost: true })];
  assert.equal(checkResource(lost, true).violations.length, 2); // stale token accepted + lost update
  const control = checkResource(lost, false);
  assert.equal(control.violations.length, 0);
  assert.equal(control.lostUpdates, 1);
});
