// The watch clients of a run, as one OS process in the client namespace: one SSE stream
// (GET /v1/watch, every name) per node slot, each pinned to its node — never failing over,
// since the point is to compare what every node says (test/checkers/history/watch.ts). A stream that
// ends (the node was killed, stopped, cut a slow reader or installed a snapshot) is opened
// again on the same node, resuming by index as the SDK's client.watch does: after the
// index before the last event's (one command's events share an index and a cut can fall
// between them), the re-sent events of that index being checked against those already
// had. A resume point the node no longer keeps (410 compacted) is logged, and the stream
// opens afresh (the holders as state, then live events): the checker knows that range was
// not covered by this node.
//
// It records what the server sent, not a cleaned-up feed: every connection, every event
// in the order it came, the opening state and its id-only marker, each end and each 410,
// as JSON lines on stdout ({ w: … } records, in batches per socket read). Commands on
// stdin: "drain" (wait until every stream stands at the same last index), "stop".
// Started by the runner with one JSON argument (WatchArgs).
import { request, type IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';
import { clockFrom } from './recorder.js';
import type { WatchEv } from '../checkers/history/watch-records.js';
import { sseFields } from '@raftlock/client/internal';

export interface WatchArgs {
  /** the node slots' API URLs; stream i is labelled n<i+1> */
  endpoints: string[];
  t0: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as WatchArgs;
const now = clockFrom(BigInt(args.t0));
const write = (o: unknown): void => void process.stdout.write(JSON.stringify(o) + '\n');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let stopping = false;
const IDLE_MS = 20_000; // the server sends a keepalive comment every 15 s

class Stream {
  /** the index of the last event had, and how many events of it (null: fresh open next) */
  last: number | null = null;
  givenAtLast = 0;
  /** the state's marker seen: the stream is live */
  synced = false;
  /** the highest index of an event this stream had (-1: none) */
  lastEvent = -1;
  conn = 0;
  private req: ReturnType<typeof request> | null = null;

  constructor(readonly node: string, readonly url: string) {}

  /** the index the stream stands at (events or the opening marker) */
  position(): number {
    return this.last ?? -1;
  }

  async run(): Promise<void> {
    /** a 410 for `last - 1` with `compacted_index <= last`: resume strictly after `last` */
    let afterLast = false;
    while (!stopping) {
      const from = this.last === null ? null : this.givenAtLast > 0 && !afterLast ? this.last - 1 : this.last;
      const conn = ++this.conn;
      write({ w: 'conn', node: this.node, conn, from, t: now() });
      const r = await this.connect(conn, from);
      afterLast = false;
      if (r.kind === 'refused') {
        if (r.status === 410) {
          if (this.last !== null && r.compacted !== undefined && r.compacted <= this.last && from !== this.last) afterLast = true;
          else {
            this.last = null; // a gap: open afresh (the checker sees the 410)
            this.givenAtLast = 0;
            this.synced = false;
          }
        }
        await sleep(200);
      } else await sleep(r.kind === 'error' ? 200 : 50);
    }
  }

  stop(): void {
    this.req?.destroy();
  }

  private connect(conn: number, from: number | null): Promise<{ kind: 'refused'; status: number; compacted?: number } | { kind: 'ended' } | { kind: 'error' }> {
    return new Promise((resolve) => {
      const u = new URL(`${this.url}/v1/watch${from === null ? '' : `?from_index=${from}`}`);
      let done = false;
      let idle: NodeJS.Timeout | undefined;
      const finish = (v: Awaited<ReturnType<Stream['connect']>>, reason: string): void => {
        if (done) return;
        done = true;
        clearTimeout(idle);
        this.req = null;
        if (v.kind !== 'refused') write({ w: 'end', node: this.node, conn, reason, t: now() });
        req.destroy();
        resolve(v);
      };
      const req = request(u, { method: 'GET', headers: { accept: 'text/event-stream' }, timeout: 3000 });
      this.req = req;
      req.on('timeout', () => finish({ kind: 'error' }, 'connect timeout'));
      req.on('error', (e) => finish({ kind: 'error' }, `error ${(e as NodeJS.ErrnoException).code ?? e.message}`));
      req.on('response', (res: IncomingMessage) => {
        req.setTimeout(0);
        if (res.statusCode !== 200) {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            let code: string | undefined;
            let compacted: number | undefined;
            try {
              const b = JSON.parse(text) as { error?: { code?: string; compacted_index?: number } };
              code = b.error?.code;
              if (typeof b.error?.compacted_index === 'number') compacted = b.error.compacted_index;
            } catch {
              /* not JSON */
            }
            write({ w: 'refused', node: this.node, conn, status: res.statusCode ?? 0, ...(code !== undefined ? { code } : {}), ...(compacted !== undefined ? { compacted_index: compacted } : {}), t: now() });
            finish({ kind: 'refused', status: res.statusCode ?? 0, ...(compacted !== undefined ? { compacted } : {}) }, 'refused');
          });
          res.on('error', () => finish({ kind: 'error' }, 'error reading refusal'));
          return;
        }
        const arm = (): void => {
          clearTimeout(idle);
          idle = setTimeout(() => finish({ kind: 'error' }, `silent for ${IDLE_MS} ms`), IDLE_MS);
        };
        arm();
        let buf = '';
        let opening: WatchEv[] | null = from === null ? [] : null;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          arm();
          buf += chunk;
          const evs: WatchEv[] = [];
          let cut: number;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const f = parseFrame(buf.slice(0, cut));
            buf = buf.slice(cut + 2);
            if (f === null) continue;
            if (f.kind === 'marker') {
              // the end of the opening: the holders as of this index
              write({ w: 'state', node: this.node, conn, evs: opening ?? [], marker: f.index, t: now() });
              opening = null;
              if (this.last === null || f.index > this.last) {
                this.last = f.index;
                this.givenAtLast = 0;
              }
              this.synced = true;
              continue;
            }
            if (f.ev.event === 'state' && opening !== null) {
              opening.push(f.ev);
              continue;
            }
            evs.push(f.ev);
            const i = f.ev.data.index;
            this.lastEvent = Math.max(this.lastEvent, i);
            if (i === this.last) this.givenAtLast++;
            else if (this.last === null || i > this.last) {
              this.last = i;
              this.givenAtLast = 1;
            }
          }
          if (evs.length) write({ w: 'evs', node: this.node, conn, evs, t: now() });
          if (buf.length > 1024 * 1024) finish({ kind: 'error' }, 'a frame over 1 MiB');
        });
        res.on('end', () => finish({ kind: 'ended' }, 'ended by the server'));
        res.on('error', () => finish({ kind: 'error' }, 'connection lost'));
        res.on('close', () => finish({ kind: 'ended' }, 'closed'));
      });
      req.end();
    });
  }
}

type Frame = { kind: 'marker'; index: number } | { kind: 'event'; ev: WatchEv };

/** one SSE frame → an event, the id-only marker, or null (a comment) */
export function parseFrame(frame: string): Frame | null {
  const { id, name, data } = sseFields(frame);
  if (name === undefined && data === '') return id !== undefined && /^\d+$/.test(id) ? { kind: 'marker', index: Number(id) } : null;
  let d: unknown;
  try {
    d = JSON.parse(data);
  } catch {
    d = { unparsable: data.slice(0, 200), index: -1 };
  }
  const o = (typeof d === 'object' && d !== null ? d : { bad: data.slice(0, 200) }) as Record<string, unknown>;
  const index = typeof o.index === 'number' ? o.index : -1;
  return { kind: 'event', ev: { event: name ?? '?', data: { ...o, index } } };
}

const streams = args.endpoints.map((ep, i) => new Stream(`n${i + 1}`, ep));
const running = streams.map((s) => s.run());

/** wait until every stream is live and stands at or after the last event any stream had,
 *  unchanged for half a second (bounded). A stream opened afresh stands at its opening's
 *  marker, which may lie past the last event (entries without events). */
async function drain(deadlineMs: number): Promise<Record<string, number>> {
  const end = now() + deadlineMs;
  let stableSince = now();
  let lastKey = '';
  while (now() < end) {
    const key = streams.map((s) => `${s.synced ? 1 : 0}:${s.position()}`).join(',');
    const maxEvent = Math.max(...streams.map((s) => s.lastEvent));
    const same = streams.every((s) => s.synced && s.position() >= maxEvent);
    if (key !== lastKey) {
      lastKey = key;
      stableSince = now();
    } else if (same && now() - stableSince >= 500) break;
    await sleep(50);
  }
  return Object.fromEntries(streams.map((s) => [s.node, s.position()]));
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  let cmd: { id?: number; cmd?: string; deadlineMs?: number };
  try {
    cmd = JSON.parse(line) as typeof cmd;
  } catch {
    cmd = { cmd: line.trim() };
  }
  if (cmd.cmd === 'drain') write({ reply: cmd.id, value: await drain(cmd.deadlineMs ?? 15_000) });
  if (cmd.cmd === 'stop') break;
}
stopping = true;
for (const s of streams) s.stop();
await Promise.race([Promise.all(running), sleep(2000)]);
process.exit(0);
