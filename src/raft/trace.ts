// Opt-in per-step trace of the write path (`npm run bench -- --trace`, BENCHMARKS.md
// "Per-step trace"). Off unless the process starts with RAFTLOCK_TRACE_DIR set; then every
// step of a proposal (HTTP request in, propose, append written to a peer stream, follower
// receives, follower's save done, ack written, ack received, commit, apply, HTTP answer)
// is recorded with the system-wide monotonic clock (CLOCK_MONOTONIC, the same in every
// process on the machine, so one node's steps line up with another's) and appended to
// `<dir>/<pid>.trace`, one line per step:
//
//   <step> <node> <log index or -1> <peer or -> <microseconds>
//
// The bench lines them up per log index (bench/lock/trace.ts). When off, `trace` is one
// boolean test: nothing is allocated or written, so production pays nothing.
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';

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

/** record one step; `index` is the log index it concerns (-1: not known at this step) */
export function trace(step: string, node: string, index: number, peer = '-'): void {
  if (!tracing) return;
  lines.push(`${step} ${node} ${index} ${peer} ${traceNowUs()}\n`);
  if (lines.length >= 512) flush();
}

if (tracing) {
  mkdirSync(dir!, { recursive: true });
  setInterval(flush, 200).unref();
  process.on('exit', flush);
  // The client API's requests, seen by node:http itself: no hook in the API code. Peer
  // routes (/raft/…) are not client requests.
  const isClient = (req: IncomingMessage | undefined): boolean => req?.url !== undefined && req.url.startsWith('/v1/');
  subscribe('http.server.request.start', (msg) => {
    const req = (msg as { request?: IncomingMessage }).request;
    if (isClient(req)) trace('http_recv', '-', -1);
  });
  subscribe('http.server.response.finish', (msg) => {
    const req = (msg as { request?: IncomingMessage }).request;
    if (isClient(req)) trace('http_answer', '-', -1);
  });
}
