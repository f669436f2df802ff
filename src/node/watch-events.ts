// The one mapping from the lock FSM's events to the watch feed's events (docs/contract.md
// §4 "Watch"). The switch is exhaustive: a new FsmEvent member does not compile until it
// is mapped here, to a watch event or explicitly to none. Pure: the same entry gives the
// same watch events on every node.
import type { FsmEvent } from '../lock-fsm/index.js';

/** the contract's event names, plus `state` (the opening snapshot of a stream) */
export type WatchEventName = 'acquired' | 'released' | 'expired' | 'revoked' | 'waiting' | 'proclaimed' | 'resigned' | 'limit' | 'state';

/** `data:` of one event, keys in the order they are written */
export interface WatchData {
  kind: 'lock' | 'semaphore' | 'election';
  name: string;
  session_id?: string;
  fencing_token?: number;
  value?: string;
  mode?: 'exclusive' | 'shared';
  /** semaphores: the grant's or the request's permits */
  permits?: number;
  /** semaphores: the limit in force (acquired, state) or the new limit (limit) */
  limit?: number;
  /** why a grant ended when not by its holder's own release: session_closed, session_expired, max_hold */
  reason?: string;
  index: number;
}

export interface WatchEvent {
  event: WatchEventName;
  data: WatchData;
}

const REASON = { released: undefined, closed: 'session_closed', expired: 'session_expired' } as const;

/** The watch events of one FSM event applied at `index` (none for bookkeeping events). */
export function watchEventsOf(e: FsmEvent, index: number): WatchEvent[] {
  switch (e.type) {
    case 'granted':
      // a campaign won: its grant carries the leader's value
      if (e.value !== undefined) return [{ event: 'acquired', data: { kind: 'election', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, value: e.value, index } }];
      return [{ event: 'acquired', data: { kind: 'lock', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, mode: e.mode ?? 'exclusive', index } }];
    case 'proclaimed':
      return [{ event: 'proclaimed', data: { kind: 'election', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, value: e.value, index } }];
    case 'resigned':
      return [{ event: 'resigned', data: { kind: 'election', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, index } }];
    case 'semGranted':
      return [{ event: 'acquired', data: { kind: 'semaphore', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, permits: e.permits, limit: e.limit, index } }];
    case 'released': {
      const reason = REASON[e.reason];
      const data: WatchData = e.election === true
        ? { kind: 'election', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, index }
        : { kind: 'lock', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, mode: e.mode ?? 'exclusive', index };
      return [{ event: e.reason === 'expired' ? 'expired' : 'released', data: withReason(data, reason) }];
    }
    case 'semReleased': {
      const reason = REASON[e.reason];
      const data: WatchData = { kind: 'semaphore', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, permits: e.permits, index };
      return [{ event: e.reason === 'expired' ? 'expired' : 'released', data: withReason(data, reason) }];
    }
    case 'waiting':
      return [{ event: 'waiting', data: { kind: 'lock', name: e.name, session_id: e.sessionId, mode: e.mode ?? 'exclusive', index } }];
    case 'semWaiting':
      return [{ event: 'waiting', data: { kind: 'semaphore', name: e.name, session_id: e.sessionId, permits: e.permits, index } }];
    case 'revoked':
      return [{ event: 'revoked', data: grantData(e, index) }];
    case 'grantExpired':
      return [{ event: 'expired', data: withReason(grantData(e, index), e.reason) }];
    case 'semLimit':
      return [{ event: 'limit', data: { kind: 'semaphore', name: e.name, limit: e.limit, index } }];
    // bookkeeping of the lessor and the wait registry: nothing a watcher sees (a wait that
    // ends without a grant, a session's own start and end, lock-delay's start and end)
    case 'waitEnded':
    case 'semWaitEnded':
    case 'sessionOpened':
    case 'sessionEnded':
    case 'lockDelayStarted':
    case 'lockDelayEnded':
      return [];
    default:
      return unmapped(e);
  }
}

/** The watch events of one applied entry, in order. */
export function watchEventsOfEntry(events: readonly FsmEvent[], index: number): WatchEvent[] {
  const out: WatchEvent[] = [];
  for (const e of events) for (const w of watchEventsOf(e, index)) out.push(w);
  return out;
}

/** a grant ended by revoke or max hold: a lock's (with its mode) or a semaphore's */
function grantData(e: { kind: 'lock' | 'semaphore'; name: string; sessionId: string; fencingToken: number; mode?: 'shared'; election?: true }, index: number): WatchData {
  if (e.election === true) return { kind: 'election', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, index };
  return e.kind === 'lock'
    ? { kind: 'lock', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, mode: e.mode ?? 'exclusive', index }
    : { kind: 'semaphore', name: e.name, session_id: e.sessionId, fencing_token: e.fencingToken, index };
}

function withReason(d: WatchData, reason: string | undefined): WatchData {
  if (reason === undefined) return d;
  const { index, ...rest } = d;
  return { ...rest, reason, index };
}

/** compile-time exhaustiveness: an FsmEvent member not handled above is a type error here */
function unmapped(e: never): never {
  throw new Error(`watch: unmapped FSM event ${JSON.stringify(e)}`);
}

/** One SSE frame (docs/contract.md §4 "Watch"): `id`, `event`, `data` lines and a blank line. */
export function sseFrame(ev: WatchEvent, withId = true): string {
  return `${withId ? `id: ${ev.data.index}\n` : ''}event: ${ev.event}\ndata: ${JSON.stringify(ev.data)}\n\n`;
}
