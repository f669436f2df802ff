// client.watch(prefix) and client.observe(name) (docs/client.md "Watching"): an async
// iterator over GET /v1/watch (docs/contract.md §4 "Watch") that survives node failures.
//
// No event lost or repeated across a reconnect: every node has the same events in the same
// order, so the iterator remembers the index of the last event it gave out and how many
// events of that index it gave (one command's events share an index and a cut can fall
// between them). It resumes after the index before, and skips the ones it already gave.
// A resume point no endpoint keeps any more ends the iterator with CompactedError.
import type { Dispatcher } from 'undici';
import { CompactedError, errorFromResponse, RaftlockError, UnavailableError } from './errors.js';
import type { HttpCaller } from './http.js';

export type WatchEventName = 'acquired' | 'released' | 'expired' | 'revoked' | 'waiting' | 'proclaimed' | 'resigned' | 'limit' | 'state';

/** The `data:` of one event of GET /v1/watch (docs/contract.md §4 "Watch"), keys in the
 *  order the server writes them. The server builds its events from this type too. */
export interface WatchEventData {
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
  /** the log index of the command (for `state`: the index of the snapshot) */
  index: number;
}

/** One event of the feed (the contract's `data`, plus its `event` name). */
export interface WatchEvent extends WatchEventData {
  event: WatchEventName;
}

/** Marks the end of the opening `state` events: they are the holders as of `index`. */
export interface WatchSynced {
  event: 'synced';
  index: number;
}

export interface WatchOptions {
  /** resume after this log index (a stream opened without it starts with the current state) */
  fromIndex?: number;
  signal?: AbortSignal;
  /** a stream silent this long (no event, no keepalive comment) is taken as dead (default 45 s) */
  idleTimeoutMs?: number;
}

export interface Leader {
  session_id: string;
  value: string;
  fencing_token: number;
  /** the log index of the change that made this the current state */
  index: number;
}

const DEFAULT_IDLE_MS = 45_000;
const CONNECT_TIMEOUT_MS = 5_000;
const MAX_FRAME_BYTES = 1024 * 1024;

interface Deps {
  http: HttpCaller;
  now: () => number;
  random: () => number;
}

/** The feed in batches: the events parsed from one read of the socket (one command's
 *  events are written together, so they normally share a batch). */
export async function* watchBatches(d: Deps, prefix: string, o: WatchOptions = {}): AsyncGenerator<(WatchEvent | WatchSynced)[]> {
  let last: number | null = o.fromIndex ?? null;
  /** events of index `last` already given out (0: resume strictly after `last`) */
  let givenAtLast = 0;
  let compactedBy = new Set<string>();
  for (;;) {
    o.signal?.throwIfAborted();
    const pick = d.http.endpoints.pick();
    if (pick.waitMs > 0) await sleep(pick.waitMs, o.signal);
    const url = pick.url;
    const q = new URLSearchParams();
    if (prefix !== '') q.set('prefix', prefix);
    if (last !== null) q.set('from_index', String(givenAtLast > 0 ? last - 1 : last));
    const ac = new AbortController();
    const onAbort = (): void => ac.abort(o.signal?.reason);
    o.signal?.addEventListener('abort', onAbort, { once: true });
    let res: Dispatcher.ResponseData | undefined;
    try {
      try {
        res = await d.http.stream(url, `/v1/watch${q.size > 0 ? `?${q.toString()}` : ''}`, {}, ac.signal, CONNECT_TIMEOUT_MS);
      } catch {
        if (o.signal?.aborted) throw o.signal.reason;
        d.http.endpoints.connectFailed(url, 0.5 + d.random());
        continue;
      }
      if (res.statusCode !== 200) {
        const text = await res.body.text().catch(() => '');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const err = errorFromResponse(res.statusCode, body, url);
        if (err instanceof CompactedError) {
          // another node may still keep it (one that restored a snapshot keeps less)
          compactedBy.add(url);
          if (compactedBy.size >= d.http.endpoints.urls.length) throw err;
          d.http.endpoints.connectFailed(url, 1);
          continue;
        }
        if (err instanceof UnavailableError || res.statusCode >= 500) {
          d.http.endpoints.retryAfter(url, 1000);
          continue;
        }
        throw err; // 400, 401, 403: asking again cannot help
      }
      d.http.endpoints.succeeded(url);
      compactedBy = new Set();
      // a resume after `last - 1` re-sends the whole group of `last`: skip what was given
      const resumeIndex = last;
      let toSkip = givenAtLast;
      let buf = '';
      let timer: NodeJS.Timeout | undefined;
      const idleMs = o.idleTimeoutMs ?? DEFAULT_IDLE_MS;
      const arm = (): void => {
        clearTimeout(timer);
        timer = setTimeout(() => ac.abort(new Error(`no data for ${idleMs} ms`)), idleMs);
      };
      arm();
      try {
        for await (const chunk of res.body) {
          arm();
          buf += (chunk as Buffer).toString('utf8');
          const batch: (WatchEvent | WatchSynced)[] = [];
          let cut: number;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            const f = parseFrame(frame);
            if (f === null) continue;
            if (f.kind === 'marker') {
              if (last === null || f.index > last) {
                last = f.index;
                givenAtLast = 0;
              }
              batch.push({ event: 'synced', index: f.index });
              continue;
            }
            const ev = f.event;
            if (ev.event === 'state') {
              batch.push(ev);
              continue;
            }
            // not from a sound node: never twice. First, so that such an event does not
            // end the skipping of the resumed index's events already given
            if (last !== null && ev.index < last) continue;
            if (toSkip > 0 && ev.index === resumeIndex) {
              toSkip--;
              continue;
            }
            toSkip = 0;
            if (ev.index === last) givenAtLast++;
            else {
              last = ev.index;
              givenAtLast = 1;
            }
            batch.push(ev);
          }
      if (buf.length > MAX_FRAME_BYTES) throw new RaftlockError('bad_response', `${url}: a watch frame over ${MAX_FRAME_BYTES} bytes`);
          if (batch.length > 0) yield batch;
        }
      } finally {
        clearTimeout(timer);
      }
      // the stream ended (node shutting down, a slow-reader cut, a snapshot): resume elsewhere
      d.http.endpoints.connectFailed(url, 0.5 + d.random());
    } catch (err) {
      if (o.signal?.aborted) throw o.signal.reason;
      if (err instanceof RaftlockError && !(err instanceof UnavailableError)) throw err;
      d.http.endpoints.connectFailed(url, 0.5 + d.random());
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
      ac.abort();
      res?.body.destroy();
    }
  }

}

type Frame = { kind: 'marker'; index: number } | { kind: 'event'; event: WatchEvent };

/** The fields of one server-sent-events frame (the WHATWG grammar: comments skipped, one
 *  leading space of a value dropped, data lines joined with newlines). */
export function sseFields(frame: string): { id: string | undefined; name: string | undefined; data: string } {
  let id: string | undefined;
  let name: string | undefined;
  let data = '';
  for (const line of frame.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id') id = value;
    else if (field === 'event') name = value;
    else if (field === 'data') data = data === '' ? value : `${data}\n${value}`;
  }
  return { id, name, data };
}

/** One SSE frame → an event, the id-only marker, or null (a comment, an unknown event) */
export function parseFrame(frame: string): Frame | null {
  const { id, name, data } = sseFields(frame);
  if (name === undefined && data === '') {
    if (id === undefined || !/^\d+$/.test(id)) return null;
    return { kind: 'marker', index: Number(id) };
  }
  if (name === undefined || data === '') return null;
  let d: unknown;
  try {
    d = JSON.parse(data);
  } catch {
    throw new RaftlockError('bad_response', `watch: event data is not JSON: ${data.slice(0, 100)}`);
  }
  const o = d as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || typeof o.name !== 'string' || typeof o.kind !== 'string' || typeof o.index !== 'number') {
    throw new RaftlockError('bad_response', `watch: malformed event data: ${data.slice(0, 100)}`);
  }
  return { kind: 'event', event: { ...(o as unknown as Omit<WatchEvent, "event">), event: name as WatchEventName } };
}

/** client.watch: the feed one event at a time */
export async function* watchEvents(d: Deps, prefix: string, o: WatchOptions = {}): AsyncGenerator<WatchEvent | WatchSynced> {
  for await (const batch of watchBatches(d, prefix, o)) yield* batch;
}

/**
 * client.observe: the election's leader each time it changes (null: nobody leads), first
 * the current one. One step per command: a resign and the next candidate's win (one
 * index) give the new leader, never a null in between. Built on the feed's `kind: "election"` events for exactly `name`.
 */
export async function* observeLeaders(d: Deps, name: string, o: Omit<WatchOptions, 'fromIndex'> = {}): AsyncGenerator<Leader | null> {
  let leader = null as Leader | null;
  let given: string | undefined;
  let synced = false;
  /** index of the events applied to `leader` since the last step */
  let at: number | null = null;
  const key = (l: Leader | null): string => (l === null ? 'null' : `${l.session_id}\u0000${l.fencing_token}\u0000${l.value}`);
  /** the leader after a whole command, if it changed (one step per index) */
  const step = (): Leader | null | undefined => {
    if (!synced || key(leader) === given) return undefined;
    given = key(leader);
    return leader;
  };
  for await (const batch of watchBatches(d, name, o)) {
    const out: (Leader | null)[] = [];
    for (const e of batch) {
      if (e.event === 'synced') {
        synced = true;
        continue;
      }
      if (e.kind !== 'election' || e.name !== name) continue;
      if (e.event !== 'state' && at !== null && e.index !== at) {
        const s = step();
        if (s !== undefined) out.push(s);
      }
      at = e.index;
      switch (e.event) {
        case 'state':
        case 'acquired':
          leader = { session_id: e.session_id ?? '', value: e.value ?? '', fencing_token: e.fencing_token ?? 0, index: e.index };
          break;
        case 'proclaimed':
          if (leader !== null && (e.session_id === undefined || e.session_id === leader.session_id)) leader = { ...leader, value: e.value ?? '', index: e.index };
          break;
        case 'resigned':
        case 'released':
        case 'expired':
        case 'revoked':
          if (leader !== null && (e.session_id === undefined || e.session_id === leader.session_id)) leader = null;
          break;
        default:
          break;
      }
    }
    // a batch normally ends on a whole command: the server writes one command's events at once
    const s = step();
    if (s !== undefined) out.push(s);
    yield* out;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
