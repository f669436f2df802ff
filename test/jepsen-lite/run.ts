// One jepsen-lite run: build the network (or fall back to loopback), start the nodes, the
// fenced resource, the probe and the clients, drive the nemesis for the duration, heal,
// let the cluster settle, read every lock, stop everything, run the checkers and write the
// run folder (history.jsonl, faults.jsonl, resource.jsonl, node logs, summary.json,
// summary.txt, timeline.html). Everything it started or created is removed in `finally`,
// also when a step throws or the process gets SIGINT/SIGTERM.
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { seededRng } from '../../src/raft/core/rng.js';
import { freePort } from '../support/cluster-harness.js';
import { pairOps, type HistoryEvent, type Op } from './history.js';
import { NetLab, netnsSupport } from './netns.js';
import { Helper, NodeProcs, siblingArgv, writeClusterFile, type NodeSpec } from './procs.js';
import { categoryOf, inject, schedule, type FaultCategory, type NemesisEnv, type Variant } from './nemesis.js';
import { clockFrom } from './recorder.js';
import { checkDurability, checkLeaseSafety, checkLiveness, checkMemory, checkResource, checkTokenOrder, recoveries, type FaultRecord } from './checkers.js';
import { checkLinearizable } from './lock-model.js';
import type { ResourceLogEntry } from './resource-proc.js';
import { writeTimeline } from './timeline.js';
import type { ClientArgs } from './client-proc.js';

export interface RunOptions {
  nodes: number;
  durationMs: number;
  seed: number;
  faults: FaultCategory[];
  clients: number;
  locks: number;
  ttlMs: number;
  electionMs: [number, number];
  heartbeatMs: number;
  /** where run folders go */
  outDir: string;
  /** the resource rejects stale tokens (false: the control run) */
  fencing: boolean;
  /** use network namespaces when possible */
  netns: boolean;
  livenessBoundMs: number;
  rssLimitMb: number;
  log?: (line: string) => void;
}

export function defaultOptions(over: Partial<RunOptions> = {}): RunOptions {
  const electionMs: [number, number] = over.electionMs ?? [500, 1000];
  const ttlMs = over.ttlMs ?? 2000;
  return {
    nodes: 3,
    durationMs: 60_000,
    seed: Date.now() % 1_000_000,
    faults: ['partition', 'kill', 'pause', 'pause-client', 'packet', 'unsynced'],
    clients: (over.nodes ?? 3) + 2,
    locks: 3,
    ttlMs,
    electionMs,
    heartbeatMs: 100,
    outDir: 'jepsen-runs',
    fencing: true,
    netns: true,
    // restart + an election + one TTL for a paused holder's session to lapse, with slack:
    // 4 maximum election timeouts plus the TTL (6 s with the defaults)
    livenessBoundMs: over.livenessBoundMs ?? 4 * electionMs[1] + ttlMs,
    rssLimitMb: 400,
    ...over,
  };
}

export interface RunSummary {
  seed: number;
  nodes: number;
  clients: number;
  durationMs: number;
  dir: string;
  netns: boolean;
  netnsNote: string;
  packetMode: string;
  fencing: boolean;
  ops: number;
  opsByType: Record<string, number>;
  grants: number;
  faults: { variant: string; detail: string; start: number; end: number }[];
  faultCounts: Record<string, number>;
  skippedCategories: string[];
  linearizable: boolean | 'unknown';
  perLock: { lock: string; ops: number; result: string; steps: number }[];
  resource: { reads: number; writes: number; rejected: number; lostUpdates: number; staleAccepted: number };
  recoveries: { variant: string; recoveryMs: number | null }[];
  worstRecoveryMs: number | null;
  livenessBoundMs: number;
  maxRssMb: Record<string, number>;
  /** max RSS in the first and the last minute of the run, per node: a leak shows as growth */
  rssTrendMb: Record<string, [number, number]>;
  unexpectedExits: number;
  violations: string[];
  valid: boolean;
  reproduce: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runJepsen(opts: RunOptions): Promise<RunSummary> {
  const log = opts.log ?? ((l: string) => process.stdout.write(l + '\n'));
  const runId = randomBytes(3).toString('hex').slice(0, 5);
  const dir = join(opts.outDir, `${new Date().toISOString().replace(/[:.]/g, '-')}-n${opts.nodes}-seed${opts.seed}-${runId}`);
  mkdirSync(dir, { recursive: true });
  const t0 = process.hrtime.bigint();
  const now = clockFrom(t0);
  const rng = seededRng(opts.seed);
  const nemesisRng = rng.fork();
  const clientSeeds = rng.fork();
  log(`jepsen-lite: SEED=${opts.seed} nodes=${opts.nodes} clients=${opts.clients} duration=${opts.durationMs}ms faults=${opts.faults.join(',')} fencing=${opts.fencing} dir=${dir}`);

  const historyFile = join(dir, 'history.jsonl');
  const faultFile = join(dir, 'faults.jsonl');
  const resourceFile = join(dir, 'resource.jsonl');
  writeFileSync(historyFile, '');
  writeFileSync(faultFile, '');
  writeFileSync(resourceFile, '');
  const events: HistoryEvent[] = [];
  const faultLog = (o: Record<string, unknown>): void => appendFileSync(faultFile, JSON.stringify({ t: Number(now().toFixed(1)), ...o }) + '\n');

  // ---- network ------------------------------------------------------------------------
  const ids = Array.from({ length: opts.nodes }, (_, i) => `n${i + 1}`);
  let lab: NetLab | null = null;
  let netnsNote = 'disabled by --no-netns';
  let categories = [...opts.faults];
  const skipped: string[] = [];
  if (opts.netns) {
    const sup = await netnsSupport();
    if (sup.ok) {
      try {
        lab = await NetLab.create({ runId, nodes: ids, trace: (l) => faultLog({ cmd: l }) });
        netnsNote = `network namespaces rlj${runId}-*, bridge ${lab.bridge}`;
      } catch (err) {
        // root without CAP_NET_ADMIN (a default container), or no netns support in the kernel
        netnsNote = `cannot build network namespaces (${(err as Error).message.split('\n')[0]})`;
      }
    } else netnsNote = sup.reason;
  }
  if (!lab) {
    for (const c of ['partition', 'packet'] as const) {
      if (categories.includes(c)) {
        skipped.push(c);
        categories = categories.filter((x) => x !== c);
      }
    }
    if (skipped.length) log(`jepsen-lite: SKIPPING ${skipped.join(' and ')} faults: no network namespaces (${netnsNote}); kills and pauses still run`);
  }

  const procsToClean: Helper[] = [];
  let nodes: NodeProcs | null = null;
  const cleanup = async (): Promise<void> => {
    await Promise.all(procsToClean.map((h) => h.kill()));
    await nodes?.killAll();
    const problems = lab ? await lab.destroy() : [];
    for (const p of problems) log(`jepsen-lite: cleanup problem: ${p}`);
  };
  const onSignal = (sig: NodeJS.Signals): void => {
    log(`jepsen-lite: ${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    // ---- nodes ------------------------------------------------------------------------
    const specs: NodeSpec[] = [];
    for (const id of ids) {
      if (lab) {
        const ip = lab.ip(id);
        specs.push({ id, api: `http://${ip}:17001`, peer: `http://${ip}:17101`, listenApi: `${ip}:17001`, listenPeer: `${ip}:17101` });
      } else {
        const a = await freePort();
        const p = await freePort();
        specs.push({ id, api: `http://127.0.0.1:${a}`, peer: `http://127.0.0.1:${p}`, listenApi: `127.0.0.1:${a}`, listenPeer: `127.0.0.1:${p}` });
      }
    }
    const configPath = join(dir, 'cluster.config.json');
    writeClusterFile(configPath, specs, join(dir, 'data'), opts.ttlMs, opts.electionMs, opts.heartbeatMs);
    const env: Record<string, string> = categories.includes('unsynced') ? { RAFTLOCK_TEST_UNSYNCED_LOSS: '1' } : {};
    nodes = new NodeProcs({ dir, configPath, specs, lab, env, now });
    const np = nodes;
    for (const id of ids) np.start(id);

    // ---- resource, probe, clients -----------------------------------------------------
    const portP = new Promise<number>((resolve) => {
      const h = new Helper(siblingArgv('resource-proc'), { logFile: resourceFile, fencing: opts.fencing, t0: t0.toString(), host: '127.0.0.1' }, lab, (o) => {
        if (typeof o.port === 'number') resolve(o.port);
      }, join(dir, 'resource.err'));
      procsToClean.push(h);
    });
    const resourcePort = await Promise.race([portP, sleep(15_000).then(() => 0)]);
    if (!resourcePort) throw new Error('the fenced resource did not start');
    const locks = Array.from({ length: opts.locks }, (_, i) => `jl-${i}`);
    const endpoints = specs.map((s) => s.api);
    const onEvent = (o: Record<string, unknown>): void => {
      if (typeof o.id !== 'string' || typeof o.type !== 'string') return;
      const e = o as unknown as HistoryEvent;
      events.push(e);
      appendFileSync(historyFile, JSON.stringify(e) + '\n');
    };
    const base = { endpoints, resource: `http://127.0.0.1:${resourcePort}`, locks, ttlMs: opts.ttlMs, t0: t0.toString() };
    const probe = new Helper(siblingArgv('client-proc'), { ...base, role: 'probe', id: 'probe', seed: 0 } satisfies ClientArgs, lab, onEvent, join(dir, 'probe.err'));
    procsToClean.push(probe);

    const leader = async (): Promise<string | null> => {
      const views = (await probe.ask({ cmd: 'cluster' }, 3000)) as { status?: number; body?: { role?: string; node_id?: string; term?: number } }[] | null;
      let best: { id: string; term: number } | null = null;
      for (const v of views ?? []) {
        if (v.status === 200 && v.body?.role === 'leader' && v.body.node_id && (!best || (v.body.term ?? 0) > best.term)) best = { id: v.body.node_id, term: v.body.term ?? 0 };
      }
      return best?.id ?? null;
    };
    const waitLeader = async (ms: number): Promise<string | null> => {
      const end = now() + ms;
      while (now() < end) {
        const l = await leader();
        if (l) return l;
        await sleep(100);
      }
      return null;
    };
    const first = await waitLeader(30_000);
    if (!first) throw new Error(`no leader within 30 s (${netnsNote}); node logs in ${dir}`);
    log(`jepsen-lite: leader ${first}; network: ${netnsNote}${lab ? `; packet faults: ${lab.packetMode}` : ''}`);

    const clients: Helper[] = [];
    for (let i = 0; i < opts.clients; i++) {
      const c = new Helper(siblingArgv('client-proc'), { ...base, role: 'client', id: `c${i + 1}`, seed: clientSeeds.int(1, 2 ** 31) } satisfies ClientArgs, lab, onEvent, join(dir, `c${i + 1}.err`));
      clients.push(c);
      procsToClean.push(c);
    }
    const rssTimer = setInterval(() => np.sampleRss(), 1000);

    // ---- nemesis ----------------------------------------------------------------------
    const faults: FaultRecord[] = [];
    const pausedClients = new Set<string>();
    const holding = (): string[] => {
      // clients whose latest completed event is a successful res-read: inside the critical section
      const last = new Map<string, HistoryEvent>();
      for (let i = events.length - 1; i >= 0 && last.size < clients.length; i--) {
        const e = events[i]!;
        if (/^c\d+$/.test(e.process) && !last.has(e.process) && e.type !== 'invoke') last.set(e.process, e);
      }
      return [...last.entries()].filter(([, e]) => e.f === 'res-read' && e.type === 'ok').map(([p]) => p);
    };
    const nemEnv: NemesisEnv = {
      nodes: ids,
      ttlMs: opts.ttlMs,
      netns: lab !== null,
      leader,
      kill: (xs) => np.killMany(xs),
      restart: async (xs) => {
        for (const x of xs) if (!np.running(x)) np.start(x);
        // the heal ends when the restarted processes serve again: process start-up is
        // not the cluster's recovery, and on a loaded machine it alone can take seconds
        const want = new Set(xs.map((x) => specs.find((s) => s.id === x)!.api));
        const end = now() + 30_000;
        while (now() < end) {
          const up = ((await probe.ask({ cmd: 'health' }, 3000)) as string[] | null) ?? [];
          if ([...want].every((w) => up.includes(w))) return;
          await sleep(50);
        }
      },
      pauseNode: (x) => np.pause(x),
      resumeNode: (x) => np.resume(x),
      pickHolder: async (waitMs) => {
        const end = now() + waitMs;
        while (now() < end) {
          const h = holding().filter((c) => !pausedClients.has(c));
          if (h.length) return h[0]!;
          await sleep(5);
        }
        return `c${nemesisRng.int(1, clients.length + 1)}`;
      },
      pauseClient: (c) => {
        pausedClients.add(c);
        clients[Number(c.slice(1)) - 1]!.pause();
      },
      resumeClient: (c) => {
        pausedClients.delete(c);
        clients[Number(c.slice(1)) - 1]!.resume();
      },
      split: (a, b) => lab!.split(a, b),
      cut: (a, b) => lab!.cut(a, b),
      healPartitions: () => lab!.healPartitions(),
      startPacket: () => lab!.startPacketFaults({ delayMs: 20, jitterMs: 15, loss: 10, duplicate: 5, reorder: 15 }),
      stopPacket: () => lab!.stopPacketFaults(),
      sleep,
    };
    const plan = schedule(nemesisRng, categories, opts.nodes);
    const lastGrantAfter = (t: number): boolean => events.some((e) => e.f === 'acquire' && e.type === 'ok' && e.t >= t);
    const warmupEnd = now() + 3000;
    await sleep(Math.max(0, warmupEnd - now()));
    const endAt = now() + opts.durationMs - 3000;
    for (const v of plan) {
      if (now() >= endAt) break;
      const start = now();
      let fault: Awaited<ReturnType<typeof inject>>;
      try {
        fault = await inject(v as Variant, nemEnv, nemesisRng);
      } catch (err) {
        faultLog({ fault: v, error: (err as Error).message });
        log(`jepsen-lite: could not inject ${v}: ${(err as Error).message}`);
        await nemEnv.healPartitions?.().catch(() => undefined);
        continue;
      }
      faultLog({ fault: v, start: true, detail: fault.detail });
      log(`jepsen-lite: t=${(start / 1000).toFixed(1)}s ${v}: ${fault.detail}`);
      await sleep(fault.holdMs);
      await fault.heal();
      const end = now();
      faultLog({ fault: v, heal: true });
      faults.push({ variant: v, detail: fault.detail, start, end });
      // settle: wait for the next grant (bounded), then a quiet spell
      const settleEnd = end + opts.livenessBoundMs + 4000;
      while (now() < settleEnd && !lastGrantAfter(end)) await sleep(50);
      await sleep(nemesisRng.int(800, 2000));
    }
    while (now() < endAt + 3000) await sleep(50);

    // ---- heal everything, stop the workload, final reads -----------------------------
    for (const c of [...pausedClients]) nemEnv.resumeClient(c);
    if (lab) {
      await lab.healPartitions();
      await lab.stopPacketFaults();
    }
    for (const id of ids) {
      if (!np.running(id)) np.start(id);
      np.resume(id);
    }
    const runEnd = now();
    faultLog({ final: 'stopping clients' });
    await Promise.all(clients.map((c) => c.stop(15_000)));
    await waitLeader(20_000);
    const finalOk = await probe.ask({ cmd: 'read-all', deadlineMs: 15_000 }, 20_000);
    clearInterval(rssTimer);
    await probe.stop(5000);
    const resourceLog = readFileSync(resourceFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ResourceLogEntry);
    await cleanup();
    const leftovers = lab ? await lab.leftovers() : [];

    // ---- check ------------------------------------------------------------------------
    const ops: Op[] = pairOps(events, now());
    const summary = check(opts, { dir, ops, faults, resourceLog, runEnd, nodes: np, netnsNote, packetMode: lab ? lab.packetMode : 'none', skipped, finalOk: finalOk === true, leftovers });
    writeFileSync(join(dir, 'summary.json'), JSON.stringify(summary, null, 2));
    writeFileSync(join(dir, 'summary.txt'), summaryText(summary));
    writeTimeline(join(dir, 'timeline.html'), ops, faults, summary);
    return summary;
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function check(
  opts: RunOptions,
  r: { dir: string; ops: Op[]; faults: FaultRecord[]; resourceLog: ResourceLogEntry[]; runEnd: number; nodes: NodeProcs; netnsNote: string; packetMode: string; skipped: string[]; finalOk: boolean; leftovers: string[] },
): RunSummary {
  const violations: string[] = [];
  const lin = checkLinearizable(r.ops);
  for (const p of lin.perLock) if (p.detail) violations.push(`linearizability (${p.result}): ${p.detail}`);
  violations.push(...checkLeaseSafety(r.ops, opts.ttlMs));
  violations.push(...checkTokenOrder(r.ops));
  const res = checkResource(r.resourceLog, opts.fencing);
  violations.push(...res.violations);
  violations.push(...checkDurability(r.ops, r.faults.filter((f) => f.variant === 'kill-all' || f.variant === 'unsynced')));
  const recs = recoveries(r.ops, r.faults, r.runEnd + 10_000);
  violations.push(...checkLiveness(recs, opts.livenessBoundMs));
  if (!r.finalOk) violations.push('liveness: after the final heal, not every lock could be read linearizably within 15 s');
  for (const u of r.nodes.unexpected) violations.push(`node ${u.node} died on its own at t=${u.t.toFixed(0)} (code ${u.code}, signal ${u.signal}); log tail:\n${u.logTail}`);
  const mem = checkMemory(r.nodes.rss, opts.rssLimitMb * 1048576);
  violations.push(...mem.violations);
  for (const l of r.leftovers) violations.push(`cleanup: ${l} still exists after the run`);
  const opsByType: Record<string, number> = {};
  for (const o of r.ops) opsByType[`${o.f}:${o.type}`] = (opsByType[`${o.f}:${o.type}`] ?? 0) + 1;
  const faultCounts: Record<string, number> = {};
  for (const f of r.faults) faultCounts[f.variant] = (faultCounts[f.variant] ?? 0) + 1;
  const finite = recs.map((x) => x.recoveryMs).filter((x): x is number => x !== null);
  const valid = violations.length === 0 && lin.valid === true;
  return {
    seed: opts.seed,
    nodes: opts.nodes,
    clients: opts.clients,
    durationMs: opts.durationMs,
    dir: r.dir,
    netns: r.packetMode !== 'none',
    netnsNote: r.netnsNote,
    packetMode: r.packetMode,
    fencing: opts.fencing,
    ops: r.ops.length,
    opsByType,
    grants: r.ops.filter((o) => o.f === 'acquire' && o.type === 'ok').length,
    faults: r.faults.map((f) => ({ variant: f.variant, detail: f.detail, start: Math.round(f.start), end: Math.round(f.end) })),
    faultCounts,
    skippedCategories: r.skipped,
    linearizable: lin.valid,
    perLock: lin.perLock.map(({ lock, ops, result, steps }) => ({ lock, ops, result, steps })),
    resource: { reads: res.reads, writes: res.writes, rejected: res.rejected, lostUpdates: res.lostUpdates, staleAccepted: res.staleAccepted },
    recoveries: recs.map((x) => ({ variant: x.variant, recoveryMs: x.recoveryMs === null ? null : Math.round(x.recoveryMs) })),
    worstRecoveryMs: recs.some((x) => x.recoveryMs === null) ? null : finite.length ? Math.round(Math.max(...finite)) : 0,
    livenessBoundMs: opts.livenessBoundMs,
    maxRssMb: mem.maxMb,
    rssTrendMb: mem.trendMb,
    unexpectedExits: r.nodes.unexpected.length,
    violations,
    valid,
    reproduce: `npm run jepsen -- --nodes ${opts.nodes} --duration ${Math.round(opts.durationMs / 1000)}s --seed ${opts.seed} --faults ${opts.faults.join(',')}${opts.fencing ? '' : ' --no-fencing'}`,
  };
}

export function summaryText(s: RunSummary): string {
  const lines = [
    `jepsen-lite run: ${s.valid ? 'VALID' : 'INVALID'}  (seed ${s.seed}, ${s.nodes} nodes, ${s.clients} clients, ${Math.round(s.durationMs / 1000)} s, fencing ${s.fencing ? 'on' : 'OFF (control run)'})`,
    `network: ${s.netnsNote}; packet faults: ${s.packetMode}${s.skippedCategories.length ? `; SKIPPED: ${s.skippedCategories.join(', ')}` : ''}`,
    `operations: ${s.ops} (${Object.entries(s.opsByType).sort().map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `grants: ${s.grants}; resource: ${s.resource.writes} writes, ${s.resource.reads} reads, ${s.resource.rejected} rejected stale, ${s.resource.lostUpdates} lost updates`,
    `faults injected: ${s.faults.length} (${Object.entries(s.faultCounts).sort().map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `linearizable: ${s.linearizable} (${s.perLock.map((p) => `${p.lock}: ${p.ops} ops, ${p.steps} steps`).join('; ')})`,
    `recovery after heal: worst ${s.worstRecoveryMs === null ? 'NONE' : `${s.worstRecoveryMs} ms`} (bound ${s.livenessBoundMs} ms)`,
    `node memory (max RSS MB): ${Object.entries(s.maxRssMb).map(([k, v]) => `${k} ${v}`).join(', ')} (first minute → last minute: ${Object.entries(s.rssTrendMb).map(([k, [a, b]]) => `${k} ${a}→${b}`).join(', ')}); unexpected node exits: ${s.unexpectedExits}`,
    `violations: ${s.violations.length}`,
    ...s.violations.map((v) => `  - ${v}`),
    `reproduce: ${s.reproduce}`,
    `run folder: ${s.dir} (timeline.html, history.jsonl, faults.jsonl, resource.jsonl, n*.log)`,
  ];
  return lines.join('\n') + '\n';
}

/** remove a run folder (tests) */
export function removeRunDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export { categoryOf };
