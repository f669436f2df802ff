// Canonical text for core values: one line per Entry / Message, used in logs and in the
// golden transcripts under test/raft/testdata (etcd-io/raft's DescribeMessage in spirit).
// Stable output matters more than brevity: a change here rewrites every golden file.
import { decodeConfChange } from './conf.js';
import type { Entry, Message, Ready, Snapshot } from './types.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

/** printable ASCII as a quoted string, anything else as hex; long data is elided */
export function describeData(d: Uint8Array): string {
  const shown = d.length > 32 ? d.subarray(0, 32) : d;
  const more = d.length > 32 ? `…(${d.length}B)` : '';
  let text: string | undefined;
  try {
    text = decoder.decode(shown);
  } catch {
    text = undefined;
  }
  if (text !== undefined && /^[\x20-\x7e]*$/.test(text)) return JSON.stringify(text) + more;
  let hex = '';
  for (const b of shown) hex += b.toString(16).padStart(2, '0');
  return `0x${hex}${more}`;
}

export function describeEntry(e: Entry): string {
  const head = `${e.index}/${e.term}`;
  if (e.kind === 'noop') return `${head} noop`;
  if (e.kind === 'conf') {
    try {
      const cc = decodeConfChange(e.data);
      return `${head} conf ${cc.type} ${cc.nodeId}`;
    } catch {
      return `${head} conf <undecodable ${describeData(e.data)}>`;
    }
  }
  return `${head} ${describeData(e.data)}`;
}

export function describeEntries(ents: readonly Entry[]): string {
  return `[${ents.map(describeEntry).join(', ')}]`;
}

export function describeSnapshot(s: Snapshot): string {
  const c = s.meta.conf;
  return `snap ${s.meta.index}/${s.meta.term} voters=[${c.voters.join(',')}] learners=[${c.learners.join(',')}] data=${describeData(s.data)}`;
}

export function describeMessage(m: Message): string {
  const head = `${m.from}->${m.to} ${m.type} t${m.term}`;
  switch (m.type) {
    case 'vote':
    case 'preVote':
      return `${head} last=${m.lastIndex}/${m.lastTerm}${m.transfer ? ' transfer' : ''}`;
    case 'voteResp':
    case 'preVoteResp':
      return `${head} ${m.reject ? 'reject' : 'grant'}`;
    case 'append':
      return `${head} prev=${m.prevIndex}/${m.prevTerm} commit=${m.commit} ${describeEntries(m.entries)}`;
    case 'appendResp':
      return m.reject ? `${head} reject index=${m.index} hint=${m.hint}/${m.hintTerm}${m.lost ? ' lost' : ''}` : `${head} index=${m.index}`;
    case 'heartbeat':
      return `${head} commit=${m.commit}${m.match !== undefined ? ` match=${m.match}` : ''}${m.ctx ? ` ctx=${m.ctx}` : ''}`;
    case 'heartbeatResp':
      return `${head}${m.ctx ? ` ctx=${m.ctx}` : ''}`;
    case 'snapshot':
      return `${head} ${describeSnapshot(m.snapshot)}`;
    case 'timeoutNow':
      return head;
  }
}

/** one line per non-empty part of a Ready, in the order the driver handles them */
export function describeReadyLines(rd: Ready): string[] {
  const out: string[] = [];
  if (rd.soft) out.push(`soft: leader=${rd.soft.leader ?? '-'} role=${rd.soft.role}`);
  for (const m of rd.earlyMessages) out.push(`early: ${describeMessage(m)}`);
  if (rd.hardState) out.push(`hardState: term=${rd.hardState.term} vote=${rd.hardState.vote ?? '-'} commit=${rd.hardState.commit}`);
  if (rd.snapshot) out.push(`snapshot: ${describeSnapshot(rd.snapshot)}`);
  if (rd.entries.length > 0) out.push(`entries: ${describeEntries(rd.entries)}`);
  if (rd.entries.length > 0 || rd.hardState || rd.snapshot) out.push(`mustSync: ${rd.mustSync}`);
  for (const m of rd.messages) out.push(`msg: ${describeMessage(m)}`);
  if (rd.committed.length > 0) out.push(`committed: ${describeEntries(rd.committed)}`);
  for (const s of rd.readStates) out.push(`readState: index=${s.index} ctx=${s.ctx}`);
  return out;
}

/** the whole Ready on one line, for logs */
export function describeReady(rd: Ready): string {
  return describeReadyLines(rd).join(' | ') || 'empty';
}
