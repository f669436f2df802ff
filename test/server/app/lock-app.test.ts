// LockApp snapshots carry the member address book; restoring one replaces the book.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockApp } from '../../../src/server/app/lock-app.js';

test('restore replaces the address book with the snapshot\'s, never merges', () => {
  const donor = new LockApp({}, () => undefined);
  donor.members.set('n1', { id: 'n1', api: 'http://127.0.0.1:1', peer: 'http://127.0.0.1:2' });
  donor.members.set('n2', { id: 'n2', api: 'http://127.0.0.1:3', peer: 'http://127.0.0.1:4' });
  const snap = donor.snapshot();

  const app = new LockApp({}, () => undefined);
  app.members.set('n2', { id: 'n2', api: 'http://127.0.0.1:9', peer: 'http://127.0.0.1:10' }); // old URLs
  app.members.set('n3', { id: 'n3', api: 'http://127.0.0.1:5', peer: 'http://127.0.0.1:6' }); // removed since
  app.restore(snap, 10);
  assert.deepEqual([...app.members.values()], [...donor.members.values()]);
});
