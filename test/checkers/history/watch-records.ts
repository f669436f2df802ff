// What the watch clients record (test/jepsen-lite/watch-proc.ts writes watch.jsonl), as
// the watch checker (watch.ts) reads it: every connection, every event in the order it
// came, the opening state and its id-only marker, each end and each refusal.

/** one event as the feed sent it */
export interface WatchEv {
  event: string;
  data: Record<string, unknown> & { index: number };
}

/** the records watch-proc writes (watch.jsonl) */
export type WatchRecord =
  | { w: 'conn'; node: string; conn: number; from: number | null; t: number }
  | { w: 'refused'; node: string; conn: number; status: number; code?: string; compacted_index?: number; t: number }
  | { w: 'state'; node: string; conn: number; evs: WatchEv[]; marker: number; t: number }
  | { w: 'evs'; node: string; conn: number; evs: WatchEv[]; t: number }
  | { w: 'end'; node: string; conn: number; reason: string; t: number };
