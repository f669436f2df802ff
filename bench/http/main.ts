// CPU per HTTP request of raftlock's REST layer, against bare fastify, in one run.
//
//   npm run bench:http -- [--concurrency 64] [--requests 40000] [--reps 3] [--cpu-prof-dir DIR] [--alloc-prof-dir DIR [--alloc-survivors]]
//
// Each rep starts one server child per mode (bench/http/server.ts: `ours` is
// src/api/server.ts around a service that answers at once; `bare` is fastify with the same
// routes and answers and nothing else), in alternating order (A B, B A, …), warms it up,
// then sends --requests requests at --concurrency over keep-alive connections, a mix of
// keepalive : acquire : release = 2 : 1 : 1 (what a lock client sends). The figure is
// the server process's CPU time (user + system) over the window divided by the requests:
// CPU per request is stable on a loaded machine where throughput is not. The summary is
// the median of the reps and the ratio ours / bare.
//
// --alloc-prof-dir DIR samples every allocation of the measured window, the ones garbage
// collection already freed included (what GC pays for), into DIR/<mode>-<rep>.heapprofile;
// `node --import tsx bench/alloc-summary.ts FILE --requests N` prints bytes per request by
// function. With --alloc-survivors it samples only what outlived a scavenge (promoted, or
// made in the old generation): what makes scavenges slow and the old generation grow, so
// what keeps a request alive too long shows there (BENCHMARKS.md "Tenth round").
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

interface Cpu { user: number; system: number }
interface Sample { mode: Mode; cpuUsPerReq: number; reqPerS: number; p99Ms: number }
type Mode = 'ours' | 'bare';

const USAGE = 'usage: npm run bench:http -- [--concurrency 64] [--requests 40000] [--reps 3] [--cpu-prof-dir DIR] [--alloc-prof-dir DIR [--alloc-survivors]]';

/** a bad command line: one line naming the problem, the usage, exit 2 (no stack trace) */
function usageError(message: string): never {
  process.stderr.write(`bench:http: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseCommandLine() {
  try {
    return parseArgs({ options: { concurrency: { type: 'string', default: '64' }, requests: { type: 'string', default: '40000' }, reps: { type: 'string', default: '3' }, 'cpu-prof-dir': { type: 'string' }, 'alloc-prof-dir': { type: 'string' }, 'alloc-survivors': { type: 'boolean', default: false }, help: { type: 'boolean', default: false } } }).values;
  } catch (err) {
    return usageError((err as Error).message);
  }
}
const values = parseCommandLine();
if (values['alloc-survivors'] && values['alloc-prof-dir'] === undefined) usageError('--alloc-survivors needs --alloc-prof-dir DIR');
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
function posInt(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1) usageError(`--${name} must be a positive integer, got ${String(v)}`);
  return n;
}
const C = posInt('concurrency', values.concurrency);
const N = posInt('requests', values.requests);
const REPS = posInt('reps', values.reps);

const REQUESTS = [
  { method: 'POST' as const, path: '/v1/sessions/s-bench/keepalive', body: undefined },
  { method: 'POST' as const, path: '/v1/locks/bench/lock/acquire', body: JSON.stringify({ session_id: 's-bench', wait_ms: 0 }) },
  { method: 'POST' as const, path: '/v1/sessions/s-bench/keepalive', body: undefined },
  { method: 'POST' as const, path: '/v1/locks/bench/lock/release', body: JSON.stringify({ session_id: 's-bench', fencing_token: 7 }) },
];

function start(mode: Mode): Promise<{ child: ChildProcess; url: string }> {
  // --cpu-prof-dir DIR writes each server's V8 CPU profiles under DIR/<mode>/ (one per
  // thread: the largest is the main thread; bench/profile-summary.ts reads them)
  const prof = values['cpu-prof-dir'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof-dir']}/${mode}`];
  const child = fork(new URL('./server.ts', import.meta.url).pathname, [mode], { execArgv: ['--import', 'tsx', ...prof], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${String(code)} before it listened`)));
    child.once('message', (m) => resolve({ child, url: (m as { url: string }).url }));
  });
}

function cpuOf(child: ChildProcess): Promise<Cpu> {
  return ask<{ cpu: Cpu }>(child, 'cpu').then((m) => m.cpu);
}

/** send the server a command and wait for its one answer */
function ask<T>(child: ChildProcess, command: string): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m as T));
    child.send(command);
  });
}

/** n requests at concurrency c; returns each request's latency in ms */
async function load(pool: Pool, n: number, c: number): Promise<number[]> {
  const lat: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const r = REQUESTS[next++ % REQUESTS.length]!;
      const t0 = performance.now();
      const res = await pool.request({ method: r.method, path: r.path, body: r.body, headers: r.body === undefined ? {} : { 'content-type': 'application/json' } });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${r.method} ${r.path} answered ${res.statusCode}`);
      lat.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: c }, worker));
  return lat;
}

async function one(mode: Mode, rep: number): Promise<Sample> {
  const { child, url } = await start(mode);
  const pool = new Pool(url, { connections: C, pipelining: 1 });
  const allocDir = values['alloc-prof-dir'];
  try {
    await load(pool, Math.min(N, 5000), C); // warm-up: JIT, connections, caches
    if (allocDir !== undefined) await ask(child, values['alloc-survivors'] ? 'alloc-start-survivors' : 'alloc-start');
    const before = await cpuOf(child);
    const t0 = performance.now();
    const lat = await load(pool, N, C);
    const wallS = (performance.now() - t0) / 1000;
    const after = await cpuOf(child);
    if (allocDir !== undefined) {
      const { profile } = await ask<{ profile: unknown }>(child, 'alloc-stop');
      mkdirSync(allocDir, { recursive: true });
      writeFileSync(join(allocDir, `${mode}-${rep + 1}.heapprofile`), JSON.stringify(profile));
    }
    lat.sort((a, b) => a - b);
    const cpuUs = after.user - before.user + (after.system - before.system);
    return { mode, cpuUsPerReq: cpuUs / N, reqPerS: N / wallS, p99Ms: lat[Math.floor(lat.length * 0.99)] ?? 0 };
  } finally {
    await pool.close();
    // disconnecting makes the server exit by itself, which writes its CPU profile
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.disconnect();
    await exited;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

async function main(): Promise<void> {
  console.log(`http bench: C=${C}, ${N} requests per run, ${REPS} rep(s) per mode, mix keepalive:acquire:release 2:1:1; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const samples: Sample[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    const order: Mode[] = rep % 2 === 0 ? ['ours', 'bare'] : ['bare', 'ours'];
    for (const mode of order) {
      const s = await one(mode, rep);
      samples.push(s);
      console.log(`  rep ${rep + 1} ${mode.padEnd(4)} ${s.cpuUsPerReq.toFixed(1).padStart(6)} µs CPU/request  ${s.reqPerS.toFixed(0).padStart(6)} req/s  p99 ${s.p99Ms.toFixed(2)} ms`);
    }
  }
  const med = (m: Mode, f: (s: Sample) => number): number => median(samples.filter((s) => s.mode === m).map(f));
  const ours = med('ours', (s) => s.cpuUsPerReq);
  const bare = med('bare', (s) => s.cpuUsPerReq);
  console.log(`median: ours ${ours.toFixed(1)} µs, bare ${bare.toFixed(1)} µs CPU per request; ours/bare = ${(ours / bare).toFixed(2)}; req/s ours ${med('ours', (s) => s.reqPerS).toFixed(0)}, bare ${med('bare', (s) => s.reqPerS).toFixed(0)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
