// The wait checker of the lock simulation fires on the histories it exists to reject
// (docs/simulation-lock.md "Waits"), beside good ones that pass. The streams are a real
// LockFsm's outputs; the times (stamps, the real time of each apply, the leaders'
// tracking) are made up to be early or late.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WaitShadow } from './wait-checker.js';
import { LockFsm, type ApplyOutput, type Command } from '../../../src/lock-fsm/index.js';
import { fail, fires } from './fired.js';

/** a LockFsm fed index by index, every entry stamped at log time = its real time */
class Stream {
  index = 0;
  readonly fsm = new LockFsm();
  readonly shadow = new WaitShadow(fail, 10);
  apply(cmd: Command, realMs: number, stampedBy = 'n1/1', logMs = realMs): ApplyOutput {
    const i = ++this.index;
    const out = this.fsm.apply(i, { atMs: logMs, cmd });
    const [node, term] = stampedBy.split('/');
    this.shadow.onApplied(i, cmd, logMs, { node: node!, term: Number(term), realMs }, out, this.fsm, realMs);
    return out;
  }
  /** `tenure` applied the entry that queued `sid`'s wait for L while leading, at realMs */
  tracked(tenure: string, realMs: number, sid = 'w', target: 'lock' | 'semaphore' = 'lock', name = 'L'): void {
    this.shadow.onTracked(tenure, this.fsm, realMs, [{ target, name, sid }]);
  }
}

const open = (sessionId: string): Command => ({ kind: 'openSession', sessionId, ttlMs: 600_000, owner: sessionId, lockDelayMs: 0 });
const acquire = (sessionId: string, waitMs = 0): Command => ({ kind: 'acquire', name: 'L', sessionId, waitMs });
const other = (k: number): Command => open(`x${k}`);

/** h holds L; w waits for it (wait_ms 500), queued at 1000 by n1 of term 1 */
function queued(): Stream {
  const s = new Stream();
  s.apply(open('h'), 100);
  s.apply(open('w'), 100);
  s.apply(acquire('h'), 200);
  s.apply(acquire('w', 500), 1000);
  s.tracked('n1/1', 1000);
  return s;
}

test('a wait cancelled by its deadline passes; entries stamped before it (or within a tick after) do too', () => {
  const s = queued();
  s.apply(other(1), 1300);
  s.apply(other(2), 1505); // within the tick after the deadline 1500
  const since = s.fsm.waitOf('L', 'w')!.since;
  assert.deepEqual(s.apply({ kind: 'cancelWait', name: 'L', sessionId: 'w', since }, 1500).result.ok, true);
  s.apply(other(3), 5000);
  s.apply({ kind: 'release', name: 'L', sessionId: 'h' }, 6000);
  assert.equal(s.fsm.getLock('L').holder, undefined);
  assert.equal(s.shadow.counts.waitsQueued, 1);
  assert.equal(s.shadow.counts.waitsEnded, 1);
  assert.ok(s.shadow.counts.waitBoundChecks >= 2);
});

test('a wait that outlives its deadline on the leader that tracks it fires WaitBound', () => {
  const s = queued();
  fires('WaitBound', () => s.apply(other(1), 1520));
});

test('a grant to a session after its wait ended (a release stamped past the deadline hands it the lock) fires WaitBound', () => {
  const s = queued();
  s.apply(other(1), 1400);
  fires('WaitBound', () => s.apply({ kind: 'release', name: 'L', sessionId: 'h' }, 1600));
  // the same release stamped in time is a legitimate grant
  const ok = queued();
  const out = ok.apply({ kind: 'release', name: 'L', sessionId: 'h' }, 1490);
  assert.ok(out.events.some((e) => e.type === 'granted' && e.sessionId === 'w'));
});

test('the issue\'s history: the next leader commits the wait and never cancels it; the release a minute later hands the lock over', () => {
  // n1 proposed the acquire and was deposed; n2 (term 2) applied it while leading, at 1000
  const s = new Stream();
  s.apply(open('h'), 100);
  s.apply(open('w'), 100);
  s.apply(acquire('h'), 200);
  s.apply({ kind: 'barrier', term: 2 }, 900, 'n2/2');
  s.apply(acquire('w', 1000), 1000, 'n1/1');
  s.tracked('n2/2', 1000);
  // nothing cancels it; n2 goes on stamping entries
  fires('WaitBound', () => s.apply(other(1), 61_000, 'n2/2'));
});

test('a new leader arms the wait with what log time left of it, and excused or untracking leaders are not held to it', () => {
  const s = queued();
  // 200 ms of log time pass; n2 takes office at 9000 (real) with 300 ms of the wait left
  s.apply(other(1), 1200);
  s.shadow.onTracked('n2/2', s.fsm, 9000);
  s.apply(other(2), 9300, 'n2/2', 1250);
  fires('WaitBound', () => s.apply(other(3), 9320, 'n2/2', 1260));
  // n3 never tracked it (it never led with the wait applied): nothing to hold it to
  const t = queued();
  t.apply(other(1), 99_000, 'n3/3');
  // n1's cancel was held back by the lessor fault: excused
  const u = queued();
  u.shadow.excuse('lock', 'L', 'w', 'n1/1');
  u.apply(other(1), 5000);
  // a later request of the session for the same wait extends n1's deadline
  const v = queued();
  v.shadow.onApiTracked('n1/1', 'lock', 'L', 'w', v.fsm.waitOf('L', 'w')!.since, 3000);
  v.apply(other(1), 2900);
  fires('WaitBound', () => v.apply(other(2), 3100));
});

test('semaphore waits and campaigns are checked alike', () => {
  const s = new Stream();
  s.apply(open('h'), 100);
  s.apply(open('w'), 100);
  s.apply({ kind: 'semAcquire', name: 'S', sessionId: 'h', limit: 1, permits: 1, waitMs: 0 }, 200);
  s.apply({ kind: 'semAcquire', name: 'S', sessionId: 'w', limit: 1, permits: 1, waitMs: 400 }, 1000);
  s.tracked('n1/1', 1000, 'w', 'semaphore', 'S');
  fires('WaitBound', () => s.apply({ kind: 'semRelease', name: 'S', sessionId: 'h' }, 1500));
  const c = new Stream();
  c.apply(open('h'), 100);
  c.apply(open('w'), 100);
  c.apply({ kind: 'campaign', name: 'E', sessionId: 'h', value: 'vh', waitMs: 0 }, 200);
  c.apply({ kind: 'campaign', name: 'E', sessionId: 'w', value: 'vw', waitMs: 400 }, 1000);
  c.tracked('n1/1', 1000, 'w', 'lock', 'E');
  fires('WaitBound', () => c.apply({ kind: 'resign', name: 'E', sessionId: 'h' }, 1500));
});
