// What the REST layer needs from a node's watch feed (src/server/watch/watch-hub.ts implements it;
// tests give a fake). Kept here so the API does not depend on the node's wiring.

import type { Result } from './service-result.js';

/** unsent bytes a stream may have queued before it is cut off as too slow (the opening —
 *  the holder snapshot or the resumed window, both bounded — is not held to it) */
export const WATCH_STREAM_BUFFER_BYTES = 4 * 1024 * 1024;

/** One stream's outlet. The feed writes whole SSE frames; the route owns the socket. */
export interface WatchSink {
  /** queue bytes for the client; false: the client is too far behind, cut it off */
  write(chunk: string): boolean;
  /** end the stream (shutdown, a snapshot replaced the state, the client was too slow) */
  end(reason: string): void;
}

export interface WatchSubscription {
  /** stop delivering (the client went away); idempotent */
  close(): void;
}

export interface WatchFeed {
  /**
   * Opens a stream of events whose name starts with `prefix`. fromIndex null: the stream
   * opens with one `state` frame per current holder and an `id:`-only frame naming the
   * index of that snapshot; else it resumes after fromIndex. Refused `compacted` (410)
   * when events after fromIndex are no longer kept, `too_many_requests` (429) at
   * limits.max_watch_streams, `unavailable` while the node shuts down. Nothing is written
   * to the sink when it refuses.
   */
  open(prefix: string, fromIndex: number | null, sink: WatchSink): Result<WatchSubscription>;
}
