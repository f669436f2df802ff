// The one mapping from the lock FSM's events to the watch feed's events (docs/contract.md
// §4 "Watch"). The switch is exhaustive: a new FsmEvent member does not compile until it
// is mapped here, to a watch event or explicitly to none. Pure: the same entry gives the
// same watch events on every node.
import type { WatchEventData, WatchEventName } from '@raftlock/client';
import type { FsmEvent } from '../../lock-fsm/index.js';

/** One event as the node keeps it: the contract's name and `data:`, whose types are the
 *  SDK's (packages/client/src/watch.ts), so server and client cannot drift apart. */
export interface WatchEvent {
  event: WatchEventName;
  data: WatchEventData;
}

const REASON = { released: undefined, closed: 'session_closed', expired: 'session_expired' } as const;

/** The FSM events no watcher sees: the lessor's and the wait registry's bookkeeping (a
 *  wait that ends without a grant, a session's own start and end, lock-delay's start and
 *  end). Every other event is watched: a new FsmEvent member does not compile until
 *  watchEventOf maps it or it is listed here. */
const UNWATCHED = {
  waitEnded: true,
  semWaitEnded: true,
  sessionOpened: true,
  sessionEnded: true,
  lockDelayStarted: true,
  lockDelayEnded: true,
  // a lock set's grant: each of its names is a `granted` event of its own, watched
  setGranted: true,
} as const satisfies Partial<Record<FsmEvent['type'], true>>;

/** an FSM event a watcher sees (each maps to exactly one watch event) */
export type WatchedFsmEvent = Exclude<FsmEvent, { type: keyof typeof UNWATCHED }>;

/** Whether `e` shows in the watch feed, without building its watch event: the feed keeps
 *  watched events as they are and formats them only when a stream reads them. */
export function isWatched(e: FsmEvent): e is WatchedFsmEvent {
  return !Object.hasOwn(UNWATCHED, e.type);
}

/** The watch event of one watched FSM event applied at `index`. */
export function watchEventOf(e: WatchedFsmEvent, index: number): WatchEvent {
  switch (e.type) {
    case 'granted':
      // a campaign won: its grant carries the leader's value
      return { event: 'acquired', data: dataOf(e.value !== undefined ? 'election' : 'lock', e, index) };
    case 'proclaimed':
      return { event: 'proclaimed', data: dataOf('election', e, index) };
    case 'resigned':
      return { event: 'resigned', data: dataOf('election', e, index) };
    case 'semGranted':
      return { event: 'acquired', data: dataOf('semaphore', e, index) };
    case 'released':
      return { event: e.reason === 'expired' ? 'expired' : 'released', data: dataOf(e.election === true ? 'election' : 'lock', e, index, REASON[e.reason]) };
    case 'semReleased':
      return { event: e.reason === 'expired' ? 'expired' : 'released', data: dataOf('semaphore', e, index, REASON[e.reason]) };
    case 'waiting':
      return { event: 'waiting', data: dataOf('lock', e, index) };
    case 'semWaiting':
      return { event: 'waiting', data: dataOf('semaphore', e, index) };
    case 'revoked':
      return { event: 'revoked', data: dataOf(e.election === true ? 'election' : e.kind, e, index) };
    case 'grantExpired':
      return { event: 'expired', data: dataOf(e.election === true ? 'election' : e.kind, e, index, e.reason) };
    case 'semLimit':
      return { event: 'limit', data: dataOf('semaphore', e, index) };
    default:
      return unmapped(e);
  }
}

/** The watch events of one FSM event applied at `index` (none for bookkeeping events). */
export function watchEventsOf(e: FsmEvent, index: number): WatchEvent[] {
  return isWatched(e) ? [watchEventOf(e, index)] : [];
}

/** The watch events of one applied entry, in order. */
export function watchEventsOfEntry(events: readonly FsmEvent[], index: number): WatchEvent[] {
  const out: WatchEvent[] = [];
  for (const e of events) if (isWatched(e)) out.push(watchEventOf(e, index));
  return out;
}

/** what an FSM event tells about one grant or request (the fields it has of these) */
interface EventFields {
  name: string;
  sessionId?: string;
  fencingToken?: number;
  value?: string;
  mode?: 'shared';
  permits?: number;
  limit?: number;
}

/** The one builder of an event's `data`: the event's fields in the contract's key order.
 *  A lock's `mode` is always written (exclusive when the event has none); an election's
 *  and a semaphore's never. `reason` only when a grant ended other than by its release. */
function dataOf(kind: WatchEventData['kind'], e: EventFields, index: number, reason?: string): WatchEventData {
  const d: Omit<WatchEventData, 'index'> & { index?: number } = { kind, name: e.name };
  if (e.sessionId !== undefined) d.session_id = e.sessionId;
  if (e.fencingToken !== undefined) d.fencing_token = e.fencingToken;
  if (e.value !== undefined) d.value = e.value;
  if (kind === 'lock') d.mode = e.mode ?? 'exclusive';
  if (e.permits !== undefined) d.permits = e.permits;
  if (e.limit !== undefined) d.limit = e.limit;
  if (reason !== undefined) d.reason = reason;
  d.index = index;
  return d as WatchEventData;
}

/** compile-time exhaustiveness: an FsmEvent member not handled above is a type error here */
function unmapped(e: never): never {
  throw new Error(`watch: unmapped FSM event ${JSON.stringify(e)}`);
}

/** The SSE frame of one watched FSM event applied at `index`. */
export function frameOf(e: WatchedFsmEvent, index: number): string {
  return sseFrame(watchEventOf(e, index));
}

/** One SSE frame (docs/contract.md §4 "Watch"): `id`, `event`, `data` lines and a blank line. */
export function sseFrame(ev: WatchEvent, withId = true): string {
  return `${withId ? `id: ${ev.data.index}\n` : ''}event: ${ev.event}\ndata: ${JSON.stringify(ev.data)}\n\n`;
}
