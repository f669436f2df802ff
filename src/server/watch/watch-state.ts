// The holders a watch stream opens with (one `state` event each, docs/contract.md §4
// "Watch"): every lock grant (an election's leader as kind election, with its value), then
// every semaphore grant, under the prefix, by name.
import type { LockFsm } from '../../lock-fsm/index.js';
import type { WatchEventData } from '@raftlock/client';

export function currentHolders(fsm: LockFsm, prefix: string): Omit<WatchEventData, 'index'>[] {
  const out: Omit<WatchEventData, 'index'>[] = [];
  for (const l of fsm.listLocks(prefix, Number.MAX_SAFE_INTEGER)) {
    const leader = l.mode === 'exclusive' ? fsm.getElection(l.name).leader : null;
    if (leader !== null) {
      // an election's leader (docs/contract.md §4 "Leader election"), with its value
      out.push({ kind: 'election', name: l.name, session_id: leader.sessionId, fencing_token: leader.fencingToken, value: leader.value });
      continue;
    }
    for (const h of l.holders ?? []) out.push({ kind: 'lock', name: l.name, session_id: h.sessionId, fencing_token: h.fencingToken, mode: h.mode });
  }
  for (const s of fsm.listSemaphores(prefix, Number.MAX_SAFE_INTEGER)) {
    for (const h of s.holders) out.push({ kind: 'semaphore', name: s.name, session_id: h.sessionId, fencing_token: h.fencingToken, permits: h.permits, limit: s.limit });
  }
  return out;
}
