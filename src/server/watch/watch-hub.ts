// The watch feed of one node (docs/contract.md §4 "Watch", docs/operations.md "Watch
// streams"): the events of every applied entry, in log order — the same on every node,
// since they come from the same entries through the same pure mapping (watch-events.ts) —
// kept in a bounded window (watch-ring.ts) and pushed to the open streams.
//
// Cost: an event is serialized once, and only when a stream reads it (live, or on a resume
// from the window: a node nobody watches keeps the FSM's events and formats nothing),
// matched once per distinct prefix, and written to each stream whose prefix matches; idle
// streams cost one shared keepalive timer, no timer or buffer of their own. A stream
// whose socket has more than WATCH_STREAM_BUFFER_BYTES (api/watch-feed.ts) unsent is cut
// off (its client resumes from the last index it saw), so a slow reader cannot make the
// node buffer without limit.
import type { WatchEventData } from '@raftlock/client';
import type { ApplyOutput, FsmEvent } from '../../lock-fsm/index.js';
import { Failure } from '../../api/failure.js';
import { ok, refused, type Result } from '../../api/service-result.js';
import type { WatchFeed, WatchSink, WatchSubscription } from '../../api/watch-feed.js';
import { WatchRing } from './watch-ring.js';
import { frameOf, isWatched, sseFrame, type WatchedFsmEvent } from './watch-events.js';

/** a comment line this often keeps idle streams (and proxies in between) open */
export const WATCH_KEEPALIVE_MS = 15_000;

export interface WatchHubOptions {
  /** events_retained: the window a stream can resume from */
  retained: number;
  /** limits.max_watch_streams */
  maxStreams: number;
  /** the index the state machine starts at (its snapshot's; 0 for an empty log) */
  appliedIndex: number;
  /** the current holders under prefix, for a stream's opening (without `index`) */
  holders: (prefix: string) => Omit<WatchEventData, 'index'>[];
  /** gauge hook: number of open streams */
  onStreams?: (n: number) => void;
  keepaliveMs?: number;
}

interface Stream {
  prefix: string;
  sink: WatchSink;
  open: boolean;
  /** the stream has every event up to this index (its opening's, or its from_index): a
   *  node behind the resume point (restarted, replaying its log) applies those entries
   *  again, and they must not be sent twice */
  after: number;
}

export class WatchHub implements WatchFeed {
  private readonly ring: WatchRing<WatchedFsmEvent>;
  private readonly streams = new Set<Stream>();
  private readonly byPrefix = new Map<string, Set<Stream>>();
  private applied: number;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly o: WatchHubOptions) {
    this.ring = new WatchRing<WatchedFsmEvent>(o.retained, o.appliedIndex, frameOf);
    this.applied = o.appliedIndex;
  }

  get streamCount(): number {
    return this.streams.size;
  }

  /** lowest index a stream can resume after */
  get floor(): number {
    return this.ring.floor;
  }

  get appliedIndex(): number {
    return this.applied;
  }

  /** driver hook, for every applied entry in log order (conf entries too: output undefined) */
  onApplied(index: number, out: ApplyOutput | undefined): void {
    this.applied = index;
    const events: readonly FsmEvent[] = out?.events ?? [];
    if (events.length === 0) return;
    const watched = events.filter(isWatched);
    if (watched.length === 0) return;
    const names = watched.map((e) => e.name);
    if (this.streams.size === 0) {
      // nobody reads it now: keep the events, a resume formats them (watch-ring.ts)
      this.ring.push(index, names, watched);
      return;
    }
    const frames = watched.map((e) => frameOf(e, index));
    this.ring.push(index, names, frames);
    // per distinct prefix, not per stream: streams on prefixes an event does not match cost
    // nothing, and the chunk for a prefix is built once for all its streams
    const all = frames.join('');
    const slow: Stream[] = [];
    for (const [prefix, group] of this.byPrefix) {
      let chunk = all;
      if (prefix !== '') {
        chunk = '';
        for (let i = 0; i < frames.length; i++) if ((names[i] as string).startsWith(prefix)) chunk += frames[i] as string;
        if (chunk === '') continue;
      }
      for (const s of group) if (index > s.after && !s.sink.write(chunk)) slow.push(s);
    }
    for (const s of slow) this.cut(s, 'the client reads too slowly; resume from the last index it received');
  }

  /** A snapshot replaced the state (installed from the leader): events up to `index` are
   *  unknown here, and every open stream would have a gap, so each is ended (its client
   *  resumes elsewhere or learns 410 compacted). */
  onSnapshotRestored(index: number): void {
    this.applied = index;
    this.ring.reset(index);
    for (const s of [...this.streams]) this.cut(s, 'a snapshot replaced this node\'s state');
  }

  open(prefix: string, fromIndex: number | null, sink: WatchSink): Result<WatchSubscription> {
    if (this.closed) return refused(new Failure('unavailable', 'the node is shutting down'));
    if (this.streams.size >= this.o.maxStreams) return refused(new Failure('too_many_requests', `this node serves its maximum of ${this.o.maxStreams} watch streams (limits.max_watch_streams)`, { details: { limit: 'watch_streams' } }));
    if (fromIndex !== null && !this.ring.covers(fromIndex)) {
      return refused(new Failure('compacted', `events after index ${fromIndex} are no longer kept by this node (it keeps those after ${this.ring.floor}); open the stream without from_index for the current state`, { details: { compacted_index: this.ring.floor } }));
    }
    const s: Stream = { prefix, sink, open: true, after: fromIndex ?? this.applied };
    let opening: string;
    if (fromIndex === null) {
      // one consistent snapshot at this.applied: everything here is synchronous, so no
      // entry is applied between reading the holders and registering the stream
      const at = this.applied;
      opening = '';
      for (const h of this.o.holders(prefix)) opening += sseFrame({ event: 'state', data: Object.assign({}, h, { index: at }) }, false);
      // an id-only frame dispatches nothing but sets the client's last event id: resuming
      // after it loses no event and repeats none (docs/contract.md §4 "Watch")
      opening += `id: ${at}\n\n`;
    } else {
      opening = this.ring.replay(fromIndex, prefix);
    }
    this.streams.add(s);
    let group = this.byPrefix.get(prefix);
    if (group === undefined) this.byPrefix.set(prefix, (group = new Set()));
    group.add(s);
    this.o.onStreams?.(this.streams.size);
    this.ensureTimer();
    // the opening is bounded by the window (or the holder set): it is not held to the
    // per-stream buffer bound, live events are
    s.sink.write(opening === '' ? ': open\n\n' : opening);
    return ok({ close: () => this.drop(s) });
  }

  /** Ends every stream (node shutdown). */
  close(): void {
    this.closed = true;
    for (const s of [...this.streams]) this.cut(s, 'the node is shutting down');
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private cut(s: Stream, reason: string): void {
    this.drop(s);
    s.sink.end(reason);
  }

  private drop(s: Stream): void {
    if (!s.open) return;
    s.open = false;
    this.streams.delete(s);
    const group = this.byPrefix.get(s.prefix);
    group?.delete(s);
    if (group?.size === 0) this.byPrefix.delete(s.prefix);
    this.o.onStreams?.(this.streams.size);
    if (this.streams.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** one timer for all streams, only while there are streams */
  private ensureTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      for (const s of [...this.streams]) if (!s.sink.write(': keepalive\n\n')) this.cut(s, 'the client reads too slowly');
    }, this.o.keepaliveMs ?? WATCH_KEEPALIVE_MS);
    this.timer.unref();
  }
}
