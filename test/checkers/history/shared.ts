// The checkers of the shared-lock and semaphore workloads (docs/jepsen-lite.md
// "Checkers" 8 and 9). They reason about grants as the exclusive lease checker does
// (checkers.ts grantWindows / knownGrants): a grant is proven by its acquire's answer; it
// is held until its session's lease may lapse (send time of an acknowledged op + TTL) or
// the holder started to let go; tokens order grants (one global sequence). On top, the
// access-logged resource (resource-proc.ts) gives the real interval of every use of a
// grant, clipped to the grant's safe window: outside it a paused client may still act,
// and only fencing can stop it.
import { describeOp, type Op } from './history.js';
import { grantWindows, knownGrants, type Grant, type GrantWindows, type Ttl } from './grants.js';
import type { AccessLogEntry } from './resource-logs.js';
import { isSharedLock, SEM_PREFIX } from './names.js';

/** one access of the resource: begin (accepted) to end (Infinity when none was logged) */
interface Access {
  name: string;
  token: number;
  mode?: 'read' | 'write';
  permits: number;
  begin: AccessLogEntry;
  end: AccessLogEntry | undefined;
}

function accessesOf(log: readonly AccessLogEntry[], keep: (name: string) => boolean): Access[] {
  const open = new Map<string, Access>();
  const out: Access[] = [];
  for (const e of [...log].sort((a, b) => a.seq - b.seq)) {
    if (!keep(e.name)) continue;
    const k = `${e.name}#${e.token}`;
    if (e.phase === 'begin') {
      if (!e.accepted || open.has(k)) continue; // a refused begin is no access; a retried one is the same
      const a: Access = { name: e.name, token: e.token, permits: e.permits ?? 1, begin: e, end: undefined };
      if (e.mode !== undefined) a.mode = e.mode;
      open.set(k, a);
      out.push(a);
    } else {
      const a = open.get(k);
      if (a) {
        a.end = e;
        open.delete(k);
      }
    }
  }
  return out;
}

/** the part of an access inside its grant's safe window, or null (no grant known, or
 *  the window had closed before the access began) */
function clipped(a: Access, grants: ReadonlyMap<string, Grant>, win: GrantWindows): { from: number; to: number; grant: Grant } | null {
  const g = grants.get(`${a.name}#${a.token}`);
  if (!g) return null;
  const from = Math.max(a.begin.t, g.complete);
  const to = Math.min(a.end?.t ?? Infinity, win.end(g));
  return to > from ? { from, to, grant: g } : null;
}

const short = (s: string): string => s.slice(0, 8);
const at = (t: number): string => (Number.isFinite(t) ? t.toFixed(1) : '∞');

// ---- 8. shared locks -------------------------------------------------------------------

export interface SharedReport {
  grants: number;
  sharedGrants: number;
  exclusiveGrants: number;
  reads: number;
  writes: number;
  /** begins or ends the resource refused as stale */
  rejected: number;
  /** two reads in progress together inside their safe windows: the sharing that is allowed */
  concurrentReads: number;
  /** begins/ends the resource accepted below the fencing bound, and pairs of accepted
   *  accesses overlapping with a write: violations with fencing on, the control run's
   *  evidence with it off */
  staleAccepted: number;
  overlapsAccepted: number;
  violations: string[];
}

/**
 * The shared-lock workload: readers (shared) and writers (exclusive) of the names
 * isSharedLock() selects.
 * - Grants: no grant is made to another session while an earlier grant's safe window is
 *   open, unless both are shared: for tokens t1 < t2 (t2 granted after t1), the grant of
 *   t2 completed before t1's window closed. Shared with shared is the point and allowed.
 * - Accesses: no write overlaps another access (read or write) where both lie inside
 *   their holders' safe windows; reads overlap reads freely (counted).
 * - Fencing at the resource (fencing on): no begin or end accepted for a read with a
 *   token below a write's already begun, nor for a write below any access's; and no two
 *   accesses the resource accepted (begin and end) overlap with one of them a write.
 */
export function checkSharedLocks(ops: readonly Op[], log: readonly AccessLogEntry[], ttl: Ttl, fencing: boolean): SharedReport {
  const violations: string[] = [];
  const win = grantWindows(ops, ttl);
  const grants = knownGrants(ops).filter((g) => isSharedLock(g.lock));
  const byLock = new Map<string, Grant[]>();
  for (const g of grants) byLock.set(g.lock, [...(byLock.get(g.lock) ?? []), g]);
  for (const [lock, gs] of byLock) {
    gs.sort((a, b) => a.token - b.token);
    const ends = gs.map((g) => win.end(g));
    for (let j = 1; j < gs.length; j++) {
      const g2 = gs[j]!;
      for (let i = 0; i < j; i++) {
        const g1 = gs[i]!;
        if (g1.session === g2.session || (g1.mode === 'shared' && g2.mode === 'shared')) continue;
        if (g2.complete < ends[i]!) {
          violations.push(
            `shared lock: ${lock} granted ${g2.mode} to ${short(g2.session)} (token ${g2.token}) by t=${at(g2.complete)} while ${short(g1.session)} held it ${g1.mode} (token ${g1.token}) safely until ${at(ends[i]!)}` +
              `\n    ${describeOp(g1.op)}\n    ${describeOp(g2.op)}`,
          );
          break; // one report per later grant
        }
      }
    }
  }

  const grantMap = new Map(grants.map((g) => [`${g.lock}#${g.token}`, g]));
  const accesses = accessesOf(log, isSharedLock);
  const inside = accesses.map((a) => ({ a, c: clipped(a, grantMap, win) })).filter((x): x is { a: Access; c: NonNullable<ReturnType<typeof clipped>> } => x.c !== null);
  inside.sort((x, y) => x.c.from - y.c.from);
  let concurrentReads = 0;
  for (let i = 0; i < inside.length; i++) {
    const x = inside[i]!;
    for (let j = i + 1; j < inside.length && inside[j]!.c.from < x.c.to; j++) {
      const y = inside[j]!;
      if (y.a.name !== x.a.name || y.a.token === x.a.token) continue;
      if (x.a.mode === 'read' && y.a.mode === 'read') {
        concurrentReads++;
        continue;
      }
      violations.push(
        `shared lock: on ${x.a.name}, the ${x.a.mode} with token ${x.a.token} (${short(x.c.grant.session)}, [${at(x.a.begin.t)}, ${at(x.a.end?.t ?? Infinity)}]) and the ${y.a.mode} with token ${y.a.token} (${short(y.c.grant.session)}, [${at(y.a.begin.t)}, ${at(y.a.end?.t ?? Infinity)}]) ` +
          `overlap in [${at(y.c.from)}, ${at(Math.min(x.c.to, y.c.to))}], inside both holders' safe windows (to ${at(x.c.to)} and ${at(y.c.to)})\n    ${describeOp(x.c.grant.op)}\n    ${describeOp(y.c.grant.op)}`,
      );
    }
  }

  // fencing, as the resource's own log shows it
  let rejected = 0;
  let staleAccepted = 0;
  let overlapsAccepted = 0;
  let reads = 0;
  let writes = 0;
  const highest = new Map<string, { write: number; any: number }>();
  for (const e of [...log].sort((a, b) => a.seq - b.seq)) {
    if (!isSharedLock(e.name) || e.mode === undefined) continue;
    if (e.phase === 'begin') {
      if (e.mode === 'read') reads++;
      else writes++;
    }
    if (!e.accepted) {
      rejected++;
      continue;
    }
    const h = highest.get(e.name) ?? { write: 0, any: 0 };
    highest.set(e.name, h);
    const bound = e.mode === 'read' ? h.write : h.any;
    if (e.token < bound) staleAccepted++;
    if (fencing && e.token < bound) {
      violations.push(`shared lock fencing: the resource accepted the ${e.phase} of a ${e.mode} on ${e.name} with token ${e.token} after ${e.mode === 'read' ? 'a write' : 'an access'} with token ${bound} had begun (entry ${e.seq})`);
    }
    if (e.phase === 'begin') {
      h.any = Math.max(h.any, e.token);
      if (e.mode === 'write') h.write = Math.max(h.write, e.token);
    }
  }
  {
    const done = accesses.filter((a) => a.end?.accepted === true).sort((x, y) => x.begin.t - y.begin.t);
    for (let i = 0; i < done.length; i++) {
      const x = done[i]!;
      for (let j = i + 1; j < done.length && done[j]!.begin.seq < x.end!.seq; j++) {
        const y = done[j]!;
        if (y.name !== x.name || y.token === x.token || (x.mode === 'read' && y.mode === 'read')) continue;
        overlapsAccepted++;
        if (fencing) violations.push(`shared lock fencing: the resource accepted the ${x.mode} with token ${x.token} (entries ${x.begin.seq}–${x.end!.seq}) and the ${y.mode} with token ${y.token} (entries ${y.begin.seq}–${y.end?.seq ?? '?'}) on ${x.name}, which overlap`);
      }
    }
  }
  return {
    grants: grants.length,
    sharedGrants: grants.filter((g) => g.mode === 'shared').length,
    exclusiveGrants: grants.filter((g) => g.mode === 'exclusive').length,
    reads,
    writes,
    rejected,
    concurrentReads,
    staleAccepted,
    overlapsAccepted,
    violations,
  };
}

// ---- 9. semaphores ---------------------------------------------------------------------

export interface SemaphoreReport {
  grants: number;
  /** the limit each semaphore was acquired with */
  limits: Record<string, number>;
  /** the most permits in use at once inside the holders' safe windows, at the resource */
  maxInWindows: Record<string, number>;
  /** the most permits in use at once as the resource counted them (stale holders too) */
  maxAtResource: Record<string, number>;
  violations: string[];
}

const isSemaphore = (name: string): boolean => name.startsWith(SEM_PREFIX);

/**
 * The semaphore workload: the permits held at any instant never exceed the limit.
 * - Grants: when a grant with token t is made, every grant of the semaphore with a smaller
 *   token to another session whose safe window is still open at t's answer is held beside
 *   it; their permits with t's must stay within the limit.
 * - Accesses: the permits of the accesses in progress inside their holders' safe windows,
 *   summed over every instant, stay within the limit.
 * - Reads: a linearizable read never shows more permits in use than the limit, and its
 *   holders' permits add up to in_use.
 * Tokens increasing across locks and semaphores is checkTokenOrder's (checkers.ts).
 */
export function checkSemaphores(ops: readonly Op[], log: readonly AccessLogEntry[], ttl: Ttl): SemaphoreReport {
  const violations: string[] = [];
  // the largest limit the semaphore ever had: acquires name the one in force, resizes
  // change it (jm-1); the exact limit at each moment is the linearizability checker's
  const limits: Record<string, number> = {};
  for (const o of ops) {
    if ((o.f !== 'sem-acquire' && o.f !== 'sem-limit') || !o.input.lock || o.input.limit === undefined) continue;
    if (o.f === 'sem-limit' && o.type === 'fail') continue;
    limits[o.input.lock] = Math.max(limits[o.input.lock] ?? 0, o.input.limit);
  }
  const win = grantWindows(ops, ttl, 'semaphore');
  const grants = knownGrants(ops, 'semaphore');
  const byName = new Map<string, Grant[]>();
  for (const g of grants) byName.set(g.lock, [...(byName.get(g.lock) ?? []), g]);
  for (const [name, gs] of byName) {
    const limit = limits[name];
    if (limit === undefined) continue;
    gs.sort((a, b) => a.token - b.token);
    const ends = gs.map((g) => win.end(g));
    for (let k = 0; k < gs.length; k++) {
      const gk = gs[k]!;
      const beside = gs.filter((g, i) => i < k && g.session !== gk.session && gk.complete < ends[i]!);
      const held = gk.permits + beside.reduce((n, g) => n + g.permits, 0);
      if (held > limit) {
        violations.push(
          `semaphore: ${name} granted ${gk.permits} permit(s) to ${short(gk.session)} (token ${gk.token}) by t=${at(gk.complete)} while ${beside.map((g) => `${short(g.session)} held ${g.permits} (token ${g.token})`).join(', ')} safely: ${held} permits, limit ${limit}` +
            `\n${[...beside, gk].map((g) => `    ${describeOp(g.op)}`).join('\n')}`,
        );
      }
    }
  }

  const grantMap = new Map(grants.map((g) => [`${g.lock}#${g.token}`, g]));
  const accesses = accessesOf(log, isSemaphore);
  const maxInWindows: Record<string, number> = {};
  const maxAtResource: Record<string, number> = {};
  for (const e of log) if (isSemaphore(e.name)) maxAtResource[e.name] = Math.max(maxAtResource[e.name] ?? 0, e.active);
  const byAccessName = new Map<string, { t: number; d: number; a: Access; g: Grant }[]>();
  for (const a of accesses) {
    const c = clipped(a, grantMap, win);
    if (!c) continue;
    const pts = byAccessName.get(a.name) ?? [];
    pts.push({ t: c.from, d: a.permits, a, g: c.grant }, { t: c.to, d: -a.permits, a, g: c.grant });
    byAccessName.set(a.name, pts);
  }
  for (const [name, pts] of byAccessName) {
    // ends before begins at the same instant: touching intervals do not overlap
    pts.sort((x, y) => x.t - y.t || x.d - y.d);
    const live = new Set<(typeof pts)[number]>();
    let n = 0;
    let reported = false;
    for (const p of pts) {
      n += p.d;
      if (p.d > 0) live.add(p);
      else for (const q of live) if (q.a === p.a) live.delete(q);
      maxInWindows[name] = Math.max(maxInWindows[name] ?? 0, n);
      const limit = limits[name];
      if (limit !== undefined && n > limit && !reported) {
        reported = true; // the first instant says it; the rest of the run would repeat it
        violations.push(
          `semaphore: ${n} permits of ${name} in use at the resource at t=${at(p.t)} inside their holders' safe windows, limit ${limit}: ` +
            [...live].map((q) => `token ${q.a.token} (${short(q.g.session)}, ${q.a.permits} permit(s), [${at(q.a.begin.t)}, ${at(q.a.end?.t ?? Infinity)}])`).join(', '),
        );
      }
    }
  }

  for (const o of ops) {
    if (o.f !== 'sem-read' || o.type !== 'ok' || !o.input.lock) continue;
    const sum = (o.output.holders ?? []).reduce((n, h) => n + h.permits, 0);
    const limit = limits[o.input.lock] ?? o.output.limit;
    if (o.output.in_use !== undefined && ((limit !== undefined && o.output.in_use > limit) || sum !== o.output.in_use)) {
      violations.push(`semaphore: a read of ${o.input.lock} shows ${o.output.in_use} permits in use (holders' permits add up to ${sum}), limit ${limit}\n    ${describeOp(o)}`);
    }
  }
  return { grants: grants.length, limits, maxInWindows, maxAtResource, violations };
}
