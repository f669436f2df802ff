// `raftlock status [--watch]`: the cluster as one table — each member's own role, term,
// commit and applied index (asked of that member), its lag behind the leader, and who
// leads. With --watch it redraws every --interval until Ctrl-C. With --json it prints
// one JSON object per refresh.
import type { Command } from 'commander';
import type { ClusterInfo, RaftlockClient } from '@raftlock/client';
import { durationFlag, printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';
import { formatTable } from './table.js';

interface Flags extends ClientFlags {
  watch?: boolean;
  interval: string;
}

export interface MemberStatus {
  id: string;
  api: string;
  role: string;
  term: number | null;
  commitIndex: number | null;
  appliedIndex: number | null;
  /** entries behind the leader's log (leader's view), or commit − applied when unknown */
  lag: number | null;
  /** why the member is not ready, as it says itself (e.g. "bootstrapping: waiting for n4") */
  notReady?: string;
  error?: string;
}

export interface ClusterStatus {
  leaderId: string | null;
  term: number;
  members: MemberStatus[];
}

/** Asks one node for the membership, then every member for its own view. */
export async function clusterStatus(client: RaftlockClient): Promise<ClusterStatus> {
  const first = await client.cluster();
  const views = await Promise.all(
    first.members.map(async (m) => {
      try {
        return { m, v: await client.cluster({ endpoint: m.api, timeoutMs: 2000 }) };
      } catch (err) {
        return { m, err: (err as Error).message };
      }
    }),
  );
  const leaderView: ClusterInfo | undefined = views.find((x) => x.v?.role === 'leader')?.v ?? (first.role === 'leader' ? first : undefined);
  const leaderId = leaderView?.nodeId ?? first.leaderId;
  const members = views.map(({ m, v, err }): MemberStatus => {
    if (!v) return { id: m.id, api: m.api, role: 'unreachable', term: null, commitIndex: null, appliedIndex: null, lag: null, ...(err ? { error: err } : {}) };
    const fromLeader = leaderView?.members.find((x) => x.id === m.id)?.lag;
    const lag = fromLeader ?? (leaderView ? Math.max(0, leaderView.commitIndex - v.appliedIndex) : null);
    return { id: m.id, api: m.api, role: v.role, term: v.term, commitIndex: v.commitIndex, appliedIndex: v.appliedIndex, lag, ...(v.notReady !== undefined ? { notReady: v.notReady } : {}) };
  });
  return { leaderId, term: leaderView?.term ?? first.term, members };
}

export function formatStatus(s: ClusterStatus): string {
  const dash = (n: number | null): string => (n === null ? '-' : String(n));
  const rows = s.members.map((m) => [m.id, m.role, dash(m.term), dash(m.commitIndex), dash(m.appliedIndex), dash(m.lag), m.api]);
  // each member that is not ready says why, under the table (e.g. "n1: bootstrapping: waiting for n4")
  const notReady = s.members.filter((m) => m.notReady !== undefined).map((m) => `${m.id}: ${m.notReady}`);
  return [`leader: ${s.leaderId ?? 'none'}  term: ${s.term}`, formatTable(['MEMBER', 'ROLE', 'TERM', 'COMMIT', 'APPLIED', 'LAG', 'API'], rows), ...notReady].join('\n');
}

export function registerStatus(program: Command): void {
  withClientOptions(
    program
      .command('status')
      .description('print the cluster: members, roles, leader, term, commit/applied index, lag')
      .option('-w, --watch', 'refresh until Ctrl-C')
      .option('--interval <duration>', 'refresh period with --watch', '1s'),
  ).action(async (f: Flags) =>
    runClientCommand('status', f, async (client) => {
      if (!f.watch) {
        const s = await clusterStatus(client);
        if (f.json) printJson(s);
        else console.log(formatStatus(s));
        return 0;
      }
      return watch(client, f, durationFlag(f.interval, '--interval', 100));
    }),
  );
}

/** Redraws until SIGINT/SIGTERM; a failed refresh shows its error and keeps watching. */
async function watch(client: RaftlockClient, f: Flags, intervalMs: number): Promise<number> {
  let stop = false;
  let wake: (() => void) | undefined;
  const onSignal = (): void => {
    stop = true;
    wake?.();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const tty = process.stdout.isTTY === true && !f.json;
  try {
    while (!stop) {
      let text: string;
      try {
        const s = await clusterStatus(client);
        text = f.json ? JSON.stringify({ at: new Date().toISOString(), ...s }) : formatStatus(s);
      } catch (err) {
        text = f.json ? JSON.stringify({ at: new Date().toISOString(), error: (err as Error).message }) : `status unavailable: ${(err as Error).message}`;
      }
      if (tty) process.stdout.write('\x1b[H\x1b[2J');
      process.stdout.write(`${text}\n${tty ? `\n(every ${intervalMs} ms, ${new Date().toLocaleTimeString()}; Ctrl-C to stop)\n` : ''}`);
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, intervalMs);
      });
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return 0;
}
