// Re-run the history checkers on an existing run folder (`npm run jepsen -- --recheck DIR`),
// as Jepsen's `analyze`: useful after changing a checker, or to look again at a failure.
// Node-level checks (exits, memory) need the live processes and are not repeated.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pairOps, parseHistory } from '../checkers/history/history.js';
import { checkDurability, checkLeaderChanges, checkLeaseSafety, checkLiveness, checkNoOrphanGrants, checkResource, checkTokenOrder, electionsInLog, recoveries, type FaultRecord } from '../checkers/history/index.js';
import { checkLinearizable } from '../checkers/history/linearizability.js';
import type { AccessLogEntry, BankLogEntry, ResourceLogEntry } from '../checkers/history/resource-logs.js';
import { checkLockSets, projectLockSets } from '../checkers/history/lock-sets.js';
import { checkTransfers } from '../checkers/history/transfer.js';
import { checkKeyReuse } from '../checkers/history/keys.js';
import { checkWaitBounds, checkWaitQueues, officesOf, type Offices } from '../checkers/history/waits.js';
import { ACCOUNT_PREFIX, ACCOUNTS, OPENING_BALANCE } from './workloads.js';
import { checkSemaphores, checkSharedLocks } from '../checkers/history/shared.js';
import { isElection, isSharedLock } from './workloads.js';
import { checkElections } from '../checkers/history/election.js';
import { checkWatch } from '../checkers/history/watch.js';
import { crashLike, leaseFor } from './summary.js';
import type { WatchRecord } from '../checkers/history/watch-records.js';
import { maxOf } from '../support/extrema.js';

export interface RecheckResult {
  ops: number;
  linearizable: boolean | 'unknown';
  violations: string[];
}

function faultsFrom(text: string): FaultRecord[] {
  const out: FaultRecord[] = [];
  let open: FaultRecord | null = null;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const o = JSON.parse(line) as { t: number; at?: number; fault?: string; start?: boolean; heal?: boolean; detail?: string; clock?: FaultRecord['clock'] };
    // `at`: when the injection began (the line is written once it is in place)
    if (o.fault && o.start) open = { variant: o.fault, detail: o.detail ?? '', start: o.at ?? o.t, end: o.t, ...(o.clock ? { clock: o.clock } : {}) };
    else if (o.fault && o.heal && open) {
      open.end = o.t;
      out.push(open);
      open = null;
    }
  }
  return out;
}

export function recheck(dir: string): RecheckResult {
  const recorded = pairOps(parseHistory(readFileSync(join(dir, 'history.jsonl'), 'utf8')));
  // lock sets as the per-name operations they are on each name (lock-sets.ts)
  const ops = projectLockSets(recorded);
  const cfg = JSON.parse(readFileSync(join(dir, 'cluster.config.json'), 'utf8')) as { session: { default_ttl_ms: number }; election_timeout_ms: [number, number] };
  const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as { fencing: boolean; livenessBoundMs: number };
  const ttl = cfg.session.default_ttl_ms;
  const faults = faultsFrom(readFileSync(join(dir, 'faults.jsonl'), 'utf8'));
  const resource = readFileSync(join(dir, 'resource.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ResourceLogEntry);
  // runs from before the access-logged resource have no access.jsonl
  const accessFile = join(dir, 'access.jsonl');
  const access = existsSync(accessFile) ? readFileSync(accessFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as AccessLogEntry) : [];
  const violations: string[] = [];
  const exclusive = ops.filter((o) => !isSharedLock(o.input.lock));
  const lin = checkLinearizable(recorded); // sets as they are: one partition per linked names
  for (const p of lin.perLock) if (p.detail) violations.push(`linearizability (${p.result}): ${p.detail}`);
  // the lease the window checkers hold the service to: shortened by clock faults (summary.ts)
  const lease = leaseFor(ttl, faults).owed;
  violations.push(...checkLeaseSafety(exclusive, lease), ...checkTokenOrder(ops), ...checkNoOrphanGrants(ops), ...checkResource(resource.filter((e) => !isElection(e.lock)), summary.fencing).violations);
  violations.push(...checkElections(ops, resource, lease, summary.fencing).violations);
  // runs from before the watch streams have no watch.jsonl (and --no-watch runs an empty one)
  const watchFile = join(dir, 'watch.jsonl');
  const watch = existsSync(watchFile) ? readFileSync(watchFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as WatchRecord) : [];
  if (watch.length > 0) violations.push(...checkWatch(watch, recorded).violations);
  // the transfer workload's bank (runs without one have no bank.jsonl)
  const bankFile = join(dir, 'bank.jsonl');
  if (existsSync(bankFile)) {
    const bank = readFileSync(bankFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as BankLogEntry);
    const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `${ACCOUNT_PREFIX}${i}`);
    if (recorded.some((o) => o.f === 'acquire-all')) violations.push(...checkTransfers(recorded, bank, accounts, OPENING_BALANCE, summary.fencing).violations, ...checkLockSets(recorded));
  }
  violations.push(...checkSharedLocks(ops, access, lease, summary.fencing).violations, ...checkSemaphores(ops, access, lease).violations);
  violations.push(...checkDurability(ops, faults.filter(crashLike)));
  const end = maxOf(ops.map((o) => o.completedAt));
  violations.push(...checkLiveness(recoveries(ops, faults, end), summary.livenessBoundMs));
  // leader changes need the clock line (runs from before it have none: skipped)
  const faultLines = readFileSync(join(dir, 'faults.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { t: number; wallAtZero?: number; final?: string });
  const wallAtZero = faultLines.find((l) => typeof l.wallAtZero === 'number')?.wallAtZero;
  let offices: Offices | undefined;
  if (wallAtZero !== undefined) {
    const runEnd = faultLines.find((l) => l.final !== undefined)?.t ?? end;
    const elections = readdirSync(dir).filter((f) => /^n\d+\.log$/.test(f)).flatMap((f) => electionsInLog(f.slice(0, -4), readFileSync(join(dir, f), 'utf8'), wallAtZero));
    violations.push(...checkLeaderChanges(elections, faults, 2 * cfg.election_timeout_ms[1], runEnd, summary.livenessBoundMs));
    offices = officesOf(elections, faults, cfg.election_timeout_ms[1]);
  }
  violations.push(...checkKeyReuse(recorded).violations, ...checkWaitBounds(ops, summary.livenessBoundMs, faults, offices), ...checkWaitQueues(recorded, summary.livenessBoundMs, faults, offices));
  return { ops: recorded.length, linearizable: lin.valid, violations };
}
