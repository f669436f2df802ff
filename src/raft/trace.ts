// Opt-in per-step trace of the write path (`npm run bench -- --trace`, BENCHMARKS.md
// "Per-step trace"). Off unless the process starts with RAFTLOCK_TRACE_DIR set; then every
// step of a proposal (HTTP request in, propose, append written to a peer stream, follower
// receives, follower's save done, ack written, ack received, commit, apply, HTTP answer)
// is recorded with the system-wide monotonic clock (CLOCK_MONOTONIC, the same in every
// process on the machine, so one node's steps line up with another's) and appended to
// `<dir>/<pid>.trace`, one line per step:
//
//   <step> <node> <log index or -1> <peer or -> <microseconds> <loop> <value>
//
// `loop` is libuv's event-loop iteration count at that moment (uv_metrics_info): two steps
// of one process with the same count ran in the same turn of the loop, without the process
// going back to epoll in between. `value` is a step's own figure (µs of a GC pause, entries
// of a save), else 0. Beside the steps, the process records every GC pause (`gc`, its
// kind as the peer field) and, every 200 ms, its loop count (`loop`, value: events the
// loop handled), so the bench can count turns and wake-ups per operation and see what the
// slowest requests overlapped (BENCHMARKS.md "Third round").
//
// The bench lines them up per log index (bench/lock/trace.ts). When off, `trace` is one
// boolean test: nothing is allocated or written, so production pays nothing.
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import { PerformanceObserver, performance } from 'node:perf_hooks';

const dir = process.env['RAFTLOCK_TRACE_DIR'];

/** true when this process records a trace */
export const tracing = dir !== undefined && dir !== '';

let lines: string[] = [];
const file = tracing ? join(dir!, `${process.pid}.trace`) : '';

function flush(): void {
  if (lines.length === 0) return;
  const out = lines.join('');
  lines = [];
  try {
    appendFileSync(file, out);
  } catch {
    // a trace is a measurement aid: losing it never affects the node
  }
}

/** microseconds on the machine-wide monotonic clock */
export function traceNowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** libuv's loop iterations and handled events so far */
function loopInfo(): { loopCount: number; events: number } {
  return performance.nodeTiming.uvMetricsInfo;
}

/** record one step; `index` is the log index it concerns (-1: not known at this step) */
export function trace(step: string, node: string, index: number, peer = '-', value = 0): void {
  if (!tracing) return;
  lines.push(`${step} ${node} ${index} ${peer} ${traceNowUs()} ${loopInfo().loopCount} ${value}\n`);
  if (lines.length >= 512) flush();
}

if (tracing) {
  mkdirSync(dir!, { recursive: true });
  setInterval(() => {
    const l = loopInfo();
    lines.push(`loop - -1 - ${traceNowUs()} ${l.loopCount} ${l.events}\n`);
    flush();
  }, 200).unref();
  process.on('exit', flush);
  // GC pauses, on the monotonic clock (entries come in performance.now() ms)
  const offsetUs = traceNowUs() - performance.now() * 1000;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } | null }).detail?.kind ?? 0;
      lines.push(`gc - -1 ${kind} ${Math.round(offsetUs + e.startTime * 1000)} ${loopInfo().loopCount} ${Math.round(e.duration * 1000)}\n`);
    }
  }).observe({ entryTypes: ['gc'] });
  // The client API's requests, seen by node:http itself: no hook in the API code. Peer
  // routes (/raft/…) are not client requests.
  const isClient = (req: IncomingMessage | undefined): boolean => req?.url !== undefined && req.url.startsWith('/v1/');
  subscribe('http.server.request.start', (msg) => {
    const req = (msg as { request?: IncomingMessage }).request;
    if (isClient(req)) trace('http_recv', '-', -1);
  });
  // the answer is traced where it is handed to the socket (src/api/server.ts, an onSend
  // hook added only while tracing): node's 'finish' comes after the write completed,
  // which on a loaded machine can be after the client already has the answer
}
