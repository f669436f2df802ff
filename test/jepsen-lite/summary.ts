// The verdict of a run: every checker over the recorded facts, and the summary a person
// reads (summary.txt) and a program reads (summary.json).
import type { Op } from '../checkers/history/history.js';
import { checkDurability, checkFollowersBehind, checkLeaderChanges, checkLeaseSafety, checkLiveness, checkNoOrphanGrants, checkMemory, checkResource, checkTokenOrder, recoveries, type FaultRecord, type LagSample, type LeaderElection, type Ttl } from '../checkers/history/index.js';
import { clockMargin } from './nemesis-clock.js';
import { checkLinearizable } from '../checkers/history/linearizability.js';
import type { NodeProcs } from './procs.js';
import type { AccessLogEntry, BankLogEntry, ResourceLogEntry } from '../checkers/history/resource-logs.js';
import { checkTransfers, type TransferReport } from '../checkers/history/transfer.js';
import { checkLockSets, projectLockSets } from '../checkers/history/lock-sets.js';
import { checkKeyReuse } from '../checkers/history/keys.js';
import { checkWaitBounds, checkWaitQueues, officesOf } from '../checkers/history/waits.js';
import type { RunOptions } from './run.js';
import { checkSemaphores, checkSharedLocks, type SemaphoreReport, type SharedReport } from '../checkers/history/shared.js';
import { ACCOUNT_PREFIX, ACCOUNTS, assignWorkloads, isElection, isSharedLock, OPENING_BALANCE } from './workloads.js';
import { checkElections, type ElectionReport } from '../checkers/history/election.js';
import { checkWatch, type WatchReport } from '../checkers/history/watch.js';
import type { WatchRecord } from '../checkers/history/watch-records.js';

export interface RunSummary {
  seed: number;
  nodes: number;
  clients: number;
  /** clients per workload (lock, shared, semaphore) */
  workloads: Record<string, number>;
  durationMs: number;
  dir: string;
  netns: boolean;
  netnsNote: string;
  packetMode: string;
  fencing: boolean;
  ops: number;
  opsByType: Record<string, number>;
  grants: number;
  /** every episode; `failed`: its injection failed part way (a window, not a kind covered) */
  faults: { variant: string; detail: string; start: number; end: number; failed?: boolean }[];
  faultCounts: Record<string, number>;
  skippedCategories: string[];
  linearizable: boolean | 'unknown';
  perLock: { lock: string; kind?: string; ops: number; result: string; steps: number }[];
  resource: { reads: number; writes: number; rejected: number; lostUpdates: number; staleAccepted: number };
  /** the shared-lock workload (checkSharedLocks) */
  shared: Omit<SharedReport, 'violations'>;
  /** the semaphore workload (checkSemaphores) */
  semaphore: Omit<SemaphoreReport, 'violations'>;
  /** the election workload (checkElections) */
  election: Omit<ElectionReport, 'violations'>;
  /** the transfer workload (checkTransfers); absent when the run had none */
  transfer?: Omit<TransferReport, 'violations'> & { sets: number };
  /** requests sent under a key of an earlier, different request (checkKeyReuse) */
  reusedKeys?: { sent: number; refused: number };
  /** the watch streams (checkWatch); absent when the run had none */
  watch?: Omit<WatchReport, 'violations'>;
  /** clock faults: the safety margin, and what the window checkers found beyond it */
  clock?: { faults: number; marginMs: number; maxRate: number; expectedBeyondMargin: string[] };
  recoveries: { variant: string; recoveryMs: number | null }[];
  worstRecoveryMs: number | null;
  livenessBoundMs: number;
  /** leaders elected after the first (one per term), and how many no fault explains */
  leaderChanges: number;
  /** per member, the longest time it stayed 100+ entries behind with no fault to explain it */
  behindMs?: Record<string, number>;
  unexplainedLeaderChanges: number;
  maxRssMb: Record<string, number>;
  /** max RSS in the first and the last minute of the run, per node: a leak shows as growth */
  rssTrendMb: Record<string, [number, number]>;
  unexpectedExits: number;
  /** the node ids at the end of the run */
  members: string[];
  violations: string[];
  valid: boolean;
  reproduce: string;
}

export interface RunFacts {
  dir: string;
  ops: Op[];
  faults: FaultRecord[];
  /** leaders taking office, from the node logs (none: the check is skipped) */
  elections?: LeaderElection[];
  resourceLog: ResourceLogEntry[];
  /** begin/end at the access-logged resource (shared locks, semaphores); none before it existed */
  accessLog?: AccessLogEntry[];
  /** the bank's transfers (the transfer workload); none before it existed */
  bankLog?: BankLogEntry[];
  /** when the last fault was healed and the workload began to stop */
  runEnd: number;
  nodes: Pick<NodeProcs, 'unexpected' | 'rss'>;
  netnsNote: string;
  packetMode: string;
  skipped: string[];
  /** every lock could be read linearizably after the final heal */
  finalOk: boolean;
  /** namespaces or links of the run that survived cleanup */
  leftovers: string[];
  /** membership faults that did not restore the cluster's size */
  memberProblems?: string[];
  /** the node ids at the end (differ from n1…nN after membership faults) */
  members?: string[];
  /** the leader's view of each member's lag through the run (checkFollowersBehind) */
  lagSamples?: LagSample[];
  /** the watch streams' records (watch.jsonl); absent: the run had no watch */
  watch?: WatchRecord[];
  /** each stream's index after the final drain */
  watchDrained?: Record<string, number> | null;
}

/** Run every checker over what a run recorded and build its summary. */
export function check(opts: RunOptions, facts: RunFacts): RunSummary {
  const violations: string[] = [];
  // lock sets (the transfer workload) as the per-name operations they are on each name
  // (lock-sets.ts); the watch checker matches events against the history as recorded
  const r: RunFacts = { ...facts, ops: projectLockSets(facts.ops) };
  // every name, every primitive, against the one model; the exclusive lease rule does not
  // apply to shared locks (checkSharedLocks does), semaphore ops are another kind it skips
  const exclusive = r.ops.filter((o) => !isSharedLock(o.input.lock));
  // linearizability takes the sets as they are: the names they link are one partition
  const lin = checkLinearizable(facts.ops);
  for (const p of lin.perLock) if (p.detail) violations.push(`linearizability (${p.result}): ${p.detail}`);
  // the lease the window checkers hold the service to (clock faults shorten it: leaseFor)
  const lease = leaseFor(opts.ttlMs, r.faults);
  const windowed = (ttl: Ttl): string[] => [
    ...checkLeaseSafety(exclusive, ttl),
    ...checkSharedLocks(r.ops, r.accessLog ?? [], ttl, opts.fencing).violations,
    ...checkSemaphores(r.ops, r.accessLog ?? [], ttl).violations,
    ...checkElections(r.ops, r.resourceLog, ttl, opts.fencing).violations,
  ];
  let clock: RunSummary['clock'];
  if (lease.clockFaults > 0) {
    const real = new Set(windowed(lease.owed));
    const expectedBeyondMargin = windowed(lease.guarantee).filter((v) => !real.has(v));
    clock = { faults: lease.clockFaults, marginMs: lease.marginMs, maxRate: Number(lease.maxRate.toFixed(3)), expectedBeyondMargin };
  }
  violations.push(...checkLeaseSafety(exclusive, lease.owed));
  violations.push(...checkTokenOrder(r.ops));
  violations.push(...checkNoOrphanGrants(r.ops));
  // the election's register is the election checker's (one leader per token, the writer)
  const res = checkResource(r.resourceLog.filter((e) => !isElection(e.lock)), opts.fencing);
  violations.push(...res.violations);
  const { violations: sharedViolations, ...shared } = checkSharedLocks(r.ops, r.accessLog ?? [], lease.owed, opts.fencing);
  violations.push(...sharedViolations);
  const { violations: semViolations, ...semaphore } = checkSemaphores(r.ops, r.accessLog ?? [], lease.owed);
  violations.push(...semViolations);
  const { violations: elViolations, ...election } = checkElections(r.ops, r.resourceLog, lease.owed, opts.fencing);
  violations.push(...elViolations);
  let watch: Omit<WatchReport, 'violations'> | undefined;
  if (r.watch !== undefined) {
    const { violations: wViolations, ...w } = checkWatch(r.watch, facts.ops);
    violations.push(...wViolations);
    if (r.watchDrained === null) violations.push('watch: the watch process did not answer the final drain');
    watch = w;
  }
  let transfer: RunSummary['transfer'];
  if (opts.workloads.includes('transfer')) {
    const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `${ACCOUNT_PREFIX}${i}`);
    const { violations: tViolations, ...t } = checkTransfers(facts.ops, r.bankLog ?? [], accounts, OPENING_BALANCE, opts.fencing);
    violations.push(...tViolations, ...checkLockSets(facts.ops));
    transfer = { ...t, sets: facts.ops.filter((o) => o.f === 'acquire-all' && o.type === 'ok').length };
  }
  // waits: log time lost at leader changes, from when leaders took office (node logs; not
  // under clock faults, which move the logs' wall clocks too): checkers-waits.ts `uncounted`
  const offices = officesOf(r.elections, r.faults, opts.electionMs[1]);
  violations.push(...checkWaitBounds(r.ops, opts.livenessBoundMs, r.faults, offices), ...checkWaitQueues(facts.ops, opts.livenessBoundMs, r.faults, offices));
  const keys = checkKeyReuse(facts.ops);
  violations.push(...keys.violations);
  // a member replaced by a node with an empty disk must not lose anything acknowledged either
  // and a damaged disk is a crash that must not lose anything acknowledged either
  violations.push(...checkDurability(r.ops, r.faults.filter(crashLike)));
  violations.push(...(r.memberProblems ?? []));
  const recs = recoveries(r.ops, r.faults, r.runEnd + 10_000);
  violations.push(...checkLiveness(recs, opts.livenessBoundMs));
  const elections = r.elections ?? [];
  const leaderViolations = checkLeaderChanges(elections, r.faults, 2 * opts.electionMs[1], r.runEnd, opts.livenessBoundMs);
  violations.push(...leaderViolations);
  // left behind: 100 entries or more for 20 s with no fault in the last 10 s
  const behind = checkFollowersBehind(r.lagSamples ?? [], r.faults, { minLag: 100, minMs: 20_000, graceMs: 10_000 });
  violations.push(...behind.violations);
  if (!r.finalOk) violations.push('liveness: after the final heal, not every lock could be read linearizably within 15 s');
  for (const u of r.nodes.unexpected) violations.push(`node ${u.node} died on its own at t=${u.t.toFixed(0)} (code ${u.code}, signal ${u.signal}); log tail:\n${u.logTail}`);
  const mem = checkMemory(r.nodes.rss, opts.rssLimitMb * 1048576);
  violations.push(...mem.violations);
  for (const l of r.leftovers) violations.push(`cleanup: ${l} still exists after the run`);
  const opsByType: Record<string, number> = {};
  for (const o of facts.ops) opsByType[`${o.f}:${o.type}`] = (opsByType[`${o.f}:${o.type}`] ?? 0) + 1;
  const workloads: Record<string, number> = {};
  for (const w of assignWorkloads(opts.workloads, opts.clients)) workloads[w] = (workloads[w] ?? 0) + 1;
  const faultCounts: Record<string, number> = {};
  for (const f of r.faults) faultCounts[f.variant] = (faultCounts[f.variant] ?? 0) + 1;
  const finite = recs.map((x) => x.recoveryMs).filter((x): x is number => x !== null);
  const valid = violations.length === 0 && lin.valid === true;
  return {
    seed: opts.seed,
    nodes: opts.nodes,
    clients: opts.clients,
    workloads,
    durationMs: opts.durationMs,
    dir: r.dir,
    netns: r.packetMode !== 'none',
    netnsNote: r.netnsNote,
    packetMode: r.packetMode,
    fencing: opts.fencing,
    ops: facts.ops.length,
    opsByType,
    grants: r.ops.filter((o) => (o.f === 'acquire' || o.f === 'sem-acquire' || o.f === 'campaign') && o.type === 'ok').length,
    faults: r.faults.map((f) => ({ variant: f.variant, detail: f.detail, start: Math.round(f.start), end: Math.round(f.end), ...(f.failed ? { failed: true } : {}) })),
    faultCounts,
    skippedCategories: r.skipped,
    linearizable: lin.valid,
    perLock: lin.perLock.map(({ lock, kind, ops, result, steps }) => ({ lock, kind, ops, result, steps })),
    resource: { reads: res.reads, writes: res.writes, rejected: res.rejected, lostUpdates: res.lostUpdates, staleAccepted: res.staleAccepted },
    shared,
    semaphore,
    election,
    ...(watch !== undefined ? { watch } : {}),
    ...(transfer !== undefined ? { transfer } : {}),
    ...(keys.sent > 0 ? { reusedKeys: { sent: keys.sent, refused: keys.refused } } : {}),
    ...(clock !== undefined ? { clock } : {}),
    recoveries: recs.map((x) => ({ variant: x.variant, recoveryMs: x.recoveryMs === null ? null : Math.round(x.recoveryMs) })),
    worstRecoveryMs: recs.some((x) => x.recoveryMs === null) ? null : finite.length ? Math.round(Math.max(...finite)) : 0,
    livenessBoundMs: opts.livenessBoundMs,
    leaderChanges: Math.max(0, new Set(elections.map((e) => e.term)).size - 1),
    unexplainedLeaderChanges: leaderViolations.length,
    behindMs: Object.fromEntries(Object.entries(behind.worstMs).map(([k, v]) => [k, Math.round(v)])),
    maxRssMb: mem.maxMb,
    rssTrendMb: mem.trendMb,
    unexpectedExits: r.nodes.unexpected.length,
    members: r.members ?? [],
    violations,
    valid,
    reproduce: `npm run jepsen -- --nodes ${opts.nodes} --duration ${Math.round(opts.durationMs / 1000)}s --seed ${opts.seed} --faults ${opts.faults.join(',')} --clients ${opts.clients}${workloadArg(opts.workloads)}${opts.ttlMs !== 2000 ? ` --ttl ${opts.ttlMs}ms` : ''}${opts.netns ? '' : ' --no-netns'}${opts.emphasise.length ? ` --emphasise ${opts.emphasise.join(',')}` : ''}${opts.without?.length ? ` --without ${opts.without.join(',')}` : ''}${opts.fencing ? '' : ' --no-fencing'}${opts.watch ? '' : ' --no-watch'}`,
  };
}

/** the faults after which nothing acknowledged before them may be missing (checkDurability):
 *  crashes of every node or of a majority, replaced or wiped members, damaged disks */
export function crashLike(f: FaultRecord): boolean {
  return f.variant === 'kill-all' || f.variant === 'unsynced' || f.variant.startsWith('member-') || f.variant === 'wipe-restart' || f.variant.startsWith('corrupt-');
}

/**
 * The lease the window checkers hold the service to, from the run's clock faults
 * (nemesis-clock.ts states the margin). A renewal sent while a node's clock ran fast (from
 * one TTL before the fault to 1.5 s after its heal: a deadline set before keeps running on
 * the fast clock, and libfaketime takes up to a second to read a change) is owed:
 * - `guarantee`: what an SDK user is promised, ttl − the safety margin, at any rate;
 * - `owed`: the same within the margin (rate ≤ maxRate); beyond it, what even the fast
 *   clock still gives, ttl / rate (less 5 % for the moment a rate change lands). Missing
 *   that is a violation at any rate; missing only `guarantee` is expected beyond the margin.
 * Slow clocks and steps shorten nothing: the contract's ttl stands.
 */
export function leaseFor(ttlMs: number, faults: readonly FaultRecord[]): { owed: Ttl; guarantee: Ttl; clockFaults: number; marginMs: number; maxRate: number } {
  const { marginMs, maxRate } = clockMargin(ttlMs);
  const fast = faults.filter((f) => f.clock !== undefined && f.clock.rate > 1).map((f) => ({ from: f.start - ttlMs, to: f.end + 1500, rate: f.clock!.rate }));
  const clockFaults = faults.filter((f) => f.variant.startsWith('clock-')).length;
  if (fast.length === 0) return { owed: ttlMs, guarantee: ttlMs, clockFaults, marginMs, maxRate };
  const sdk = 1 - marginMs / ttlMs;
  const rateAt = (t: number): number => Math.max(1, ...fast.filter((w) => t >= w.from && t <= w.to).map((w) => w.rate));
  return {
    owed: { ms: ttlMs, scale: (t) => (rateAt(t) === 1 ? 1 : rateAt(t) <= maxRate ? sdk : Math.min(sdk, 0.95 / rateAt(t))) },
    guarantee: { ms: ttlMs, scale: (t) => (rateAt(t) === 1 ? 1 : sdk) },
    clockFaults,
    marginMs,
    maxRate,
  };
}

/** `--workload …` when it is not the default; a weighted list (a name twice) replays only
 *  with the same list, which the CLI cannot express: then the test's own seed line does */
function workloadArg(ws: readonly string[]): string {
  if (ws.length === 1 && ws[0] === 'lock') return '';
  return ` --workload ${ws.join(',')}`;
}

export function summaryText(s: RunSummary): string {
  const lines = [
    `jepsen-lite run: ${s.valid ? 'VALID' : 'INVALID'}  (seed ${s.seed}, ${s.nodes} nodes, ${s.clients} clients, ${Math.round(s.durationMs / 1000)} s, fencing ${s.fencing ? 'on' : 'OFF (control run)'})`,
    `network: ${s.netnsNote}; packet faults: ${s.packetMode}${s.skippedCategories.length ? `; SKIPPED: ${s.skippedCategories.join(', ')}` : ''}`,
    `operations: ${s.ops} (${Object.entries(s.opsByType).sort().map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `workloads: ${Object.entries(s.workloads ?? { lock: s.clients }).map(([k, v]) => `${k} ${v}`).join(', ')} clients`,
    `grants: ${s.grants}; resource: ${s.resource.writes} writes, ${s.resource.reads} reads, ${s.resource.rejected} rejected stale, ${s.resource.lostUpdates} lost updates`,
    ...(s.shared?.grants ? [`shared locks: ${s.shared.grants} grants (${s.shared.sharedGrants} shared, ${s.shared.exclusiveGrants} exclusive); resource: ${s.shared.reads} reads, ${s.shared.writes} writes, ${s.shared.rejected} rejected stale${s.fencing ? '' : `, ${s.shared.staleAccepted} stale accepted, ${s.shared.overlapsAccepted} accepted accesses overlapping a write`}; reads overlapping reads inside their windows: ${s.shared.concurrentReads}`] : []),
    ...(s.semaphore?.grants ? [`semaphores: ${s.semaphore.grants} grants; ${Object.keys(s.semaphore.limits).map((n) => `${n}: limit ${s.semaphore.limits[n]}, most permits in use inside safe windows ${s.semaphore.maxInWindows[n] ?? 0}, at the resource (stale holders too) ${s.semaphore.maxAtResource[n] ?? 0}`).join('; ')}`] : []),
    ...(s.election?.grants ? [`elections: ${s.election.grants} leaderships of ${s.election.leaders} sessions (${s.election.maxHoldCampaigns} of ${s.election.campaigns} campaigns asked max_hold_ms); ${s.election.revokes} revocations took ${s.election.revoked} away; the leaders' writes: ${s.election.writes}, ${s.election.rejected} refused as stale`] : []),
    ...(s.transfer ? [`transfers: ${s.transfer.sets} account pairs locked with acquire-all; the bank: ${s.transfer.transfers} transfers, ${s.transfer.accepted} applied, ${s.transfer.rejected} refused as stale, ${s.transfer.lost} lost, ${s.transfer.staleAccepted} stale accepted; total ${s.transfer.total} (opened with ${s.transfer.openingTotal})`] : []),
    ...(s.reusedKeys ? [`reused Idempotency-Keys: ${s.reusedKeys.sent} requests sent under another request's key, ${s.reusedKeys.refused} answered 422 idempotency_key_reused`] : []),
    ...(s.watch ? [`watch: ${s.watch.events} events at ${s.watch.indices} indices; ${s.watch.matched} acknowledged operations found as events (${Object.entries(s.watch.counts).sort().map(([k, v]) => `${k} ${v}`).join(', ')})${s.watch.historySkipped ? ` (history check SKIPPED: ${s.watch.historySkipped})` : ''}; ${Object.entries(s.watch.nodes).map(([n, w]) => `${n}: ${w.connections} connections, ${w.compacted} × 410, last index ${w.last}`).join('; ')}`] : []),
    `faults injected: ${s.faults.length} (${Object.entries(s.faultCounts).sort().map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `linearizable: ${s.linearizable} (${s.perLock.map((p) => `${p.lock}: ${p.ops} ops, ${p.steps} steps`).join('; ')})`,
    `recovery after heal: worst ${s.worstRecoveryMs === null ? 'NONE' : `${s.worstRecoveryMs} ms`} (bound ${s.livenessBoundMs} ms); ${s.recoveries.map((x) => `${x.variant} ${x.recoveryMs === null ? 'none' : x.recoveryMs}`).join(', ')}`,
    `leader changes: ${s.leaderChanges} (${s.unexplainedLeaderChanges} without a fault)`,
    ...(s.clock ? [`clocks: ${s.clock.faults} clock faults; safety margin ${s.clock.marginMs} ms of the TTL (a leader clock up to ×${s.clock.maxRate}); lease-window findings expected beyond the margin (not violations): ${s.clock.expectedBeyondMargin.length}`, ...s.clock.expectedBeyondMargin.slice(0, 5).map((v) => `  ~ ${v.split('\n')[0]}`)] : []),
    `node memory (max RSS MB): ${Object.entries(s.maxRssMb).map(([k, v]) => `${k} ${v}`).join(', ')} (first minute → last minute: ${Object.entries(s.rssTrendMb).map(([k, [a, b]]) => `${k} ${a}→${b}`).join(', ')}); unexpected node exits: ${s.unexpectedExits}`,
    ...(s.members.length && s.members.join(',') !== Array.from({ length: s.nodes }, (_, i) => `n${i + 1}`).join(',') ? [`members at the end (after membership changes): ${s.members.join(', ')}`] : []),
    `violations: ${s.violations.length}`,
    ...s.violations.map((v) => `  - ${v}`),
    `reproduce: ${s.reproduce}`,
    `run folder: ${s.dir} (timeline.html, history.jsonl, faults.jsonl, resource.jsonl, n*.log)`,
  ];
  return lines.join('\n') + '\n';
}
