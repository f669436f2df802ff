// The watch checker (docs/jepsen-lite.md "Checkers" 11): every node's watch stream
// (watch-proc.ts, one per node slot, resumed by index across kills, partitions and
// restarts) against the others and against the history.
//
// Each node's records become segments: a segment starts at an opening (no from_index:
// the holders as state, then the id-only marker M) and covers the log indices (M, last
// event had]; resumes continue it (the re-sent events of the last index must be those
// already had). A 410 compacted ends a segment (the node no longer keeps the resume
// point: the range up to its next opening is not covered by that node, which is allowed
// when the 410 says so: compacted_index above the resume point). The checks:
// - within a segment: indices never go back, and no index comes in two separate runs
//   (no duplicate, log order); a resumed connection sends nothing at or below its
//   from_index, and re-sends the last index's events as they were;
// - across nodes: an index two nodes have holds the same events in the same order; an
//   index one node delivered lies inside another's segment only if that one delivered it
//   too (no gap); at the end every stream reached the same last index;
// - against the history: every acknowledged grant (acquire, semaphore acquire, campaign),
//   release with its token, tokenless release, semaphore release, resign of a leader,
//   proclaim and revocation appears as its event — unless some range of indices was
//   covered by no stream at all (then that check is skipped and the summary says so).
import { describeOp, type Op } from './history.js';
import type { WatchEv, WatchRecord } from './watch-records.js';
import { maxOf } from '../../support/extrema.js';

export interface WatchNodeReport {
  connections: number;
  events: number;
  /** 410 compacted answers to a resume (each starts a new segment) */
  compacted: number;
  /** the last index the stream stood at */
  last: number;
}

export interface WatchReport {
  nodes: Record<string, WatchNodeReport>;
  /** events in the union of the streams, and distinct indices */
  events: number;
  indices: number;
  /** acknowledged operations of the history found as events */
  matched: number;
  /** events of the union by name (and reason: `expired:max_hold`, `expired:session_expired`) */
  counts: Record<string, number>;
  /** why the history check was skipped, if it was */
  historySkipped?: string;
  violations: string[];
}

interface Segment {
  start: number;
  /** the index of the last event (start before any) */
  last: number;
  groups: Map<number, WatchEv[]>;
  /** indices whose group this node may have only in part (resumed after that index) */
  partial: Set<number>;
}

const evKey = (e: WatchEv): string => JSON.stringify([e.event, e.data]);
const MAX_REPORTS = 20;

/** the segments of one node's records, and what is wrong inside them */
function segmentsOf(node: string, recs: readonly WatchRecord[], violations: string[], rep: WatchNodeReport): Segment[] {
  const segs: Segment[] = [];
  let cur: Segment | null = null;
  const from = new Map<number, number | null>();
  /** the resume in progress: re-sent events of `idx` compared with those already had */
  let resume: { conn: number; idx: number; pos: number } | null = null;
  let openingConn: number | null = null;
  const bad = (s: string): void => void (violations.length < 200 && violations.push(`watch: ${node}: ${s}`));
  for (const r of recs) {
    switch (r.w) {
      case 'conn':
        rep.connections++;
        from.set(r.conn, r.from);
        resume = null;
        if (r.from === null) {
          cur = null;
          openingConn = r.conn;
        } else if (cur === null) bad(`connection ${r.conn} resumed after ${r.from} without an opening before it`);
        else {
          resume = { conn: r.conn, idx: cur.last, pos: 0 };
          if (r.from >= cur.last) cur.partial.add(cur.last);
        }
        break;
      case 'refused':
        if (r.status === 410) {
          rep.compacted++;
          const f = from.get(r.conn);
          if (f === null || f === undefined) bad(`410 compacted for a stream opened without from_index (connection ${r.conn})`);
          else if (r.compacted_index === undefined || r.compacted_index <= f) bad(`410 compacted for a resume after ${f}, but compacted_index ${r.compacted_index ?? 'missing'} says it could resume there (connection ${r.conn})`);
        }
        break;
      case 'state':
        if (r.conn !== openingConn) break; // a marker on a resumed stream sets nothing
        cur = { start: r.marker, last: r.marker, groups: new Map(), partial: new Set() };
        segs.push(cur);
        openingConn = null;
        break;
      case 'evs':
        for (const e of r.evs) {
          rep.events++;
          const i = e.data.index;
          if (cur === null) {
            bad(`connection ${r.conn} sent ${e.event} (index ${i}) before the opening's marker`);
            continue;
          }
          if (e.event === 'state') {
            bad(`a state event (index ${i}) after the opening, on connection ${r.conn}`);
            continue;
          }
          if (resume !== null && resume.conn === r.conn) {
            const f = from.get(r.conn)!;
            if (i <= f) {
              bad(`connection ${r.conn} resumed after index ${f} but sent ${e.event} of index ${i}`);
              continue;
            }
            if (i === resume.idx) {
              const had = cur.groups.get(i) ?? [];
              if (resume.pos < had.length) {
                if (evKey(had[resume.pos]!) !== evKey(e)) bad(`connection ${r.conn} re-sent index ${i} differently: ${evKey(e)} where it had ${evKey(had[resume.pos]!)}`);
                resume.pos++;
                continue;
              }
            } else resume = null;
          }
          if (i < cur.last) {
            bad(`${e.event} of index ${i} came after index ${cur.last} (connection ${r.conn}): out of log order or a duplicate`);
            continue;
          }
          if (i === cur.start) {
            bad(`${e.event} of index ${i} came on a stream opened at index ${i} (connection ${r.conn}): the opening's state covers it`);
            continue;
          }
          const g = cur.groups.get(i);
          if (g) g.push(e);
          else cur.groups.set(i, [e]);
          cur.last = i;
        }
        break;
      case 'end':
        break;
    }
    rep.last = cur?.last ?? rep.last;
  }
  return segs;
}

/** Check the streams (records of every node, in the order each node's were written) and
 *  the history. */
export function checkWatch(records: readonly WatchRecord[], ops: readonly Op[]): WatchReport {
  const violations: string[] = [];
  const nodes: Record<string, WatchNodeReport> = {};
  const byNode = new Map<string, WatchRecord[]>();
  for (const r of records) byNode.set(r.node, [...(byNode.get(r.node) ?? []), r]);
  const segs = new Map<string, Segment[]>();
  for (const [node, recs] of [...byNode].sort(([a], [b]) => a.localeCompare(b))) {
    const rep: WatchNodeReport = { connections: 0, events: 0, compacted: 0, last: -1 };
    nodes[node] = rep;
    segs.set(node, segmentsOf(node, recs, violations, rep));
  }

  // the union: index → the events of each node that has it
  const union = new Map<number, { node: string; evs: WatchEv[]; partial: boolean }[]>();
  for (const [node, ss] of segs) {
    for (const s of ss) {
      for (const [i, evs] of s.groups) {
        const u = union.get(i) ?? [];
        u.push({ node, evs, partial: s.partial.has(i) });
        union.set(i, u);
      }
    }
  }
  let reports = 0;
  const indices = [...union.keys()].sort((a, b) => a - b);
  const reference = new Map<number, WatchEv[]>();
  for (const i of indices) {
    const u = union.get(i)!;
    // the longest (whole) group is the reference; the others must equal it, or be a prefix
    // of it where this node resumed after that very index
    const ref = [...u].sort((a, b) => b.evs.length - a.evs.length)[0]!;
    reference.set(i, ref.evs);
    const rk = ref.evs.map(evKey);
    for (const x of u) {
      if (x === ref) continue;
      const xk = x.evs.map(evKey);
      const prefix = x.partial && xk.length < rk.length && xk.every((k, j) => k === rk[j]);
      if (!prefix && (xk.length !== rk.length || xk.some((k, j) => k !== rk[j])) && reports++ < MAX_REPORTS) {
        violations.push(`watch: index ${i}: ${x.node} delivered ${xk.join(' ')} but ${ref.node} delivered ${rk.join(' ')}`);
      }
    }
  }
  // gaps: an index some node delivered, inside another node's segment, missing there
  for (const [node, ss] of segs) {
    for (const s of ss) {
      for (const i of indices) {
        if (i <= s.start || i > s.last || s.groups.has(i)) continue;
        if (reports++ < MAX_REPORTS) {
          const u = union.get(i)!;
          violations.push(`watch: ${node}'s stream skipped index ${i} (between ${s.start} and ${s.last}), which ${u.map((x) => x.node).join(', ')} delivered: ${u[0]!.evs.map(evKey).join(' ')}`);
        }
      }
    }
  }
  // the end: every stream had the last event any stream had, or opened after it (its
  // opening's marker stands for the entries up to it)
  const maxEvent = maxOf(indices, -1);
  for (const [node, ss] of segs) {
    const last = ss.at(-1)?.last ?? -1;
    if (last < maxEvent) violations.push(`watch: ${node}'s stream ended at index ${last}; another node's reached ${maxEvent}`);
  }

  // coverage: a range of indices no stream covered makes the history check impossible
  const cover = [...segs.values()].flat().map((s) => [s.start, s.last] as const).filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  let historySkipped: string | undefined;
  if (cover.length > 0) {
    let reach = cover[0]![1];
    for (const [a, b] of cover.slice(1)) {
      if (a > reach) {
        historySkipped = `indices ${reach + 1}–${a} were covered by no stream (every node answered 410 there)`;
        break;
      }
      reach = Math.max(reach, b);
    }
  }
  let matched = 0;
  if (historySkipped === undefined) {
    const keys = new Set<string>();
    for (const evs of reference.values()) {
      for (const e of evs) {
        const d = e.data;
        keys.add(`${e.event}|${String(d.name)}|${String(d.session_id)}|${String(d.fencing_token)}`);
        keys.add(`${e.event}|${String(d.name)}|${String(d.session_id)}|*`);
      }
    }
    let missing = 0;
    const need = (op: Op, event: string, session: string | undefined, token: number | undefined): void => {
      const k = `${event}|${op.input.lock}|${session}|${token === undefined ? '*' : token}`;
      if (keys.has(k)) matched++;
      else if (missing++ < MAX_REPORTS) violations.push(`watch: no stream has the ${event} event of an acknowledged ${op.f} (name ${op.input.lock}, session ${(session ?? '').slice(0, 8)}${token === undefined ? '' : `, token ${token}`})\n    ${describeOp(op)}`);
    };
    for (const op of ops) {
      if (op.type !== 'ok' || !op.input.lock) continue;
      const s = op.input.session;
      switch (op.f) {
        case 'acquire':
        case 'sem-acquire':
        case 'campaign':
          need(op, 'acquired', s, op.output.token);
          break;
        case 'release':
          need(op, 'released', s, op.input.token);
          break;
        case 'sem-release':
          need(op, 'released', s, undefined);
          break;
        case 'resign':
          if (op.input.token !== undefined) need(op, 'resigned', s, op.input.token);
          break;
        case 'proclaim':
          need(op, 'proclaimed', s, op.input.token);
          break;
        case 'revoke':
          for (const g of op.output.revoked ?? []) need(op, 'revoked', g.session, g.token);
          break;
        default:
          break;
      }
    }
  }
  const events = [...reference.values()].reduce((n, evs) => n + evs.length, 0);
  const counts: Record<string, number> = {};
  for (const evs of reference.values()) {
    for (const e of evs) {
      const k = typeof e.data.reason === 'string' ? `${e.event}:${e.data.reason}` : e.event;
      counts[k] = (counts[k] ?? 0) + 1;
    }
  }
  return { nodes, events, indices: indices.length, matched, counts, ...(historySkipped !== undefined ? { historySkipped } : {}), violations };
}
