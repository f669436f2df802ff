// `npm run bench:watch`: what watch streams cost one node (docs/operations.md "Watch
// streams"). A local 1-node cluster from dist/ (fsync on):
//  1. idle: --streams idle GET /v1/watch streams; the node's resident memory before and
//     after they open (per stream), and its CPU over --idle-s seconds of idling, against as long with no stream (the one
//     shared keepalive timer; no per-stream timer);
//  2. push: --watchers streams reading every event while --clients clients run the
//     uncontended workload (acquire → release of their own lock) for --duration-s: events
//     per second the node delivers (per watcher and in total), and the workload's ops/s
//     with and without the watchers.
// Figures come from the node's own /metrics (process_resident_memory_bytes,
// process_cpu_seconds_total). Options: --streams 1000 --idle-s 20 --watchers 100
// --clients 16 --duration-s 10.
import http from 'node:http';
import { loadavg } from 'node:os';
import { startLocalRaftlock } from './lock/raftlock-target.js';
import { runWorkload, type RunSpec } from './lock/workloads.js';
import { sumMetric } from './lock/target.js';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} needs a number, got ${process.argv[i + 1]}`);
  return v;
}

const log = (l: string): void => void process.stderr.write(`${l}\n`);

async function metrics(api: string): Promise<{ rss: number; cpu: number; streams: number }> {
  const text = await (await fetch(`${api}/metrics`)).text();
  return { rss: sumMetric(text, 'process_resident_memory_bytes'), cpu: sumMetric(text, 'process_cpu_seconds_total'), streams: sumMetric(text, 'raftlock_watch_streams') };
}

interface Watcher { events: number; close(): void }

function watcher(api: string, counting: boolean): Promise<Watcher> {
  return new Promise((resolve, reject) => {
    const w: Watcher = { events: 0, close: () => req.destroy() };
    const req = http.get(`${api}/v1/watch`, { agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`watch answered ${res.statusCode}`));
      res.setEncoding('utf8');
      let tail = '';
      res.on('data', (c: string) => {
        if (!counting) return;
        // count "\nevent: " (frame starts) without keeping the text
        const s = tail + c;
        let i = -1;
        while ((i = s.indexOf('\nevent: ', i + 1)) >= 0) w.events++;
        tail = s.slice(-8);
      });
      res.on('error', () => undefined);
      resolve(w);
    });
    req.on('error', reject);
  });
}

async function waitStreams(api: string, n: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await metrics(api)).streams !== n) {
    if (Date.now() > deadline) throw new Error(`raftlock_watch_streams never reached ${n}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  const streams = arg('streams', 1000);
  const idleS = arg('idle-s', 20);
  const watchers = arg('watchers', 100);
  const clients = arg('clients', 16);
  const durationS = arg('duration-s', 10);
  log(`machine load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const d = await startLocalRaftlock({ nodes: 1, nodeArgs: [], log, keepDir: false });
  const api = d.endpoints[0]!;
  try {
    // 1. idle streams
    await new Promise((r) => setTimeout(r, 2000));
    const b0 = await metrics(api);
    await new Promise((r) => setTimeout(r, idleS * 1000));
    const m0 = await metrics(api);
    const baseCpu = ((m0.cpu - b0.cpu) / idleS) * 100;
    const idle: Watcher[] = [];
    for (let i = 0; i < streams; i++) idle.push(await watcher(api, false));
    await waitStreams(api, streams);
    await new Promise((r) => setTimeout(r, 2000));
    const m1 = await metrics(api);
    await new Promise((r) => setTimeout(r, idleS * 1000));
    const m2 = await metrics(api);
    for (const w of idle) w.close();
    await waitStreams(api, 0);
    const idleCpu = ((m2.cpu - m1.cpu) / idleS) * 100;
    console.log(`idle: ${streams} streams: node RSS ${(m0.rss / 2 ** 20).toFixed(1)} → ${(m1.rss / 2 ** 20).toFixed(1)} MiB (${((m1.rss - m0.rss) / Math.max(1, streams) / 1024).toFixed(1)} KiB per stream); CPU over ${idleS} s idle: ${idleCpu.toFixed(2)} % of one core (${baseCpu.toFixed(2)} % with no stream)`);

    // 2. events pushed during the uncontended workload, without and with watchers
    const spec = (tag: string): RunSpec => ({ workload: 'uncontended', clients, durationMs: durationS * 1000, warmupMs: 1000, sessions: 0, runId: `w${process.pid}-${tag}` });
    const cpu = async (): Promise<Record<string, number> | null> => ({ n1: (await metrics(api)).cpu });
    const target = d.target(api, clients);
    const base = await runWorkload(target, spec('base'), () => undefined, cpu);
    const ws: Watcher[] = [];
    for (let i = 0; i < watchers; i++) ws.push(await watcher(api, true));
    await waitStreams(api, watchers);
    const c0 = (await metrics(api)).cpu;
    const e0 = ws.reduce((a, w) => a + w.events, 0);
    const t0 = performance.now();
    const run = await runWorkload(target, spec('watched'), () => undefined, cpu);
    const secs = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 500)); // the last frames in flight
    const e1 = ws.reduce((a, w) => a + w.events, 0);
    const c1 = (await metrics(api)).cpu;
    for (const w of ws) w.close();
    const pushed = (e1 - e0) / secs;
    console.log(`push: uncontended, ${clients} clients: ${base.opsPerSec.toFixed(0)} ops/s without watchers, ${run.opsPerSec.toFixed(0)} ops/s with ${watchers}; the node pushed ${pushed.toFixed(0)} events/s in total (${(pushed / Math.max(1, watchers)).toFixed(0)} per watcher; 2 events per op), node CPU ${((c1 - c0) / secs * 100).toFixed(0)} % of one core`);
  } finally {
    await d.stop();
  }
}

main().catch((err: unknown) => {
  log(`bench:watch: ${(err as Error).message}`);
  process.exitCode = 1;
});
