// `raftlock member list|add|remove|promote` and `raftlock transfer-leader [--to ID]`
// (docs/membership.md), after etcdctl's `member` and `move-leader`. Every change is sent to
// any endpoint (a follower relays it to the leader) and retried on 503/504 within the
// budget: each change is idempotent on the server (a learner already added is found and
// promoted; a leader removing itself hands over first), so repeating one is safe.
import type { Command } from 'commander';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { decodeCluster, HttpCaller } from '@raftlock/client/internal';
import { RaftlockError, type ClusterInfo } from '@raftlock/client';
import { DEFAULT_CONFIG, EXIT, connection, durationFlag, printJson, reportError, UsageError, withClientOptions, type ClientFlags } from './common.js';
import { formatTable } from './table.js';

/** promote waits while the learner catches up (the server's catch_up_timeout_ms); add
 *  answers once the learner entry commits, but may first take the snapshot a newcomer
 *  starts from */
const CHANGE_TIMEOUT = '90s';
const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

interface AddFlags extends ClientFlags {
  api: string;
  peer: string;
  learner?: boolean;
}

export function registerMember(program: Command): void {
  const member = program.command('member').description('list, add, remove and promote cluster members (docs/membership.md)');

  withClientOptions(member.command('list').description('members with their role, match index and lag (as the leader sees them)')).action((f: ClientFlags) =>
    run('member list', f, async (http) => {
      const view = await leaderView(http);
      if (f.json) printJson(view);
      else console.log(formatMembers(view));
      return EXIT.ok;
    }),
  );

  longTimeout(withClientOptions(
    member
      .command('add <id>')
      .description('add a node as a learner; the leader promotes it to voter once it has caught up (--learner: stay a learner). The node may be started before or after.')
      .requiredOption('--api <url>', "the new node's advertised API URL")
      .requiredOption('--peer <url>', "the new node's advertised peer URL")
      .option('--learner', 'add as a non-voting learner only; promote it later with `member promote`'),
  )).action((id: string, f: AddFlags) =>
    run('member add', f, async (http) => {
      const body = { id: checkId(id), api: f.api, peer: f.peer, ...(f.learner ? { learner: true } : {}) };
      return change(http, f, 'POST', '/v1/cluster/members', body, (view, via) => addedText(view, id, f, via));
    }),
  );

  longTimeout(withClientOptions(member.command('promote <id>').description('promote a learner to voter once it has caught up'))).action((id: string, f: ClientFlags) =>
    run('member promote', f, (http) => change(http, f, 'POST', `/v1/cluster/members/${encodeURIComponent(checkId(id))}/promote`, {}, () => `promoted ${id} to voter`)),
  );

  withClientOptions(member.command('remove <id>').description('remove a member (the leader hands leadership over first if it is the one removed)')).action((id: string, f: ClientFlags) =>
    run('member remove', f, (http) => change(http, f, 'DELETE', `/v1/cluster/members/${encodeURIComponent(checkId(id))}`, undefined, () => `removed ${id}`)),
  );
}

export function registerTransferLeader(program: Command): void {
  withClientOptions(
    program
      .command('transfer-leader')
      .description('hand leadership to another voter (default: the most up-to-date follower), e.g. before maintenance')
      .option('--to <id>', 'the voter to hand leadership to'),
  ).action((f: ClientFlags & { to?: string }) =>
    run('transfer-leader', f, async (http) => {
      const a = await http.call({ method: 'POST', path: '/v1/cluster/transfer-leadership', body: f.to !== undefined ? { to: checkId(f.to) } : {}, retry: 'keyed', idempotencyKey: randomUUID() });
      const leader = (a.body as { leader_id?: unknown }).leader_id;
      if (f.json) printJson(a.body);
      else console.log(`leader is now ${String(leader)}`);
      return EXIT.ok;
    }),
  );
}

// ---- helpers --------------------------------------------------------------------------

/** add/promote wait for the learner to catch up: a longer default --timeout per attempt */
function longTimeout(cmd: Command): Command {
  cmd.options.find((o) => o.long === '--timeout')?.default(CHANGE_TIMEOUT);
  return cmd;
}

function checkId(id: string): string {
  if (!ID_RE.test(id)) throw new UsageError(`member id: expected 1-63 chars of [A-Za-z0-9_-], got ${JSON.stringify(id)}`);
  return id;
}

async function change(http: HttpCaller, f: ClientFlags, method: 'POST' | 'DELETE', path: string, body: Record<string, unknown> | undefined, done: (view: ClusterInfo, via: string) => string): Promise<number> {
  const a = await http.call({ method, path, ...(body ? { body } : {}), retry: 'keyed', idempotencyKey: randomUUID() });
  const view = decodeCluster(a.body, 'cluster');
  if (f.json) printJson(view);
  else console.log(`${done(view, a.endpoint)}\n${formatMembers(view)}`);
  return EXIT.ok;
}

/** What `member add` did, and what comes next (start the node; the automatic promotion). */
export function addedText(view: ClusterInfo, id: string, f: Pick<AddFlags, 'api' | 'peer' | 'config'>, via: string): string {
  const m = view.members.find((x) => x.id === id);
  if (!m) return `the answer does not list ${id}; check \`raftlock member list\``;
  if (m.role !== 'learner') return `${id} is a voting member`;
  const running = (m.matchIndex ?? 0) > 0;
  const start = `start it (empty data dir) with:\n  raftlock serve --config ${f.config ?? DEFAULT_CONFIG} --node ${id} --api ${f.api} --peer ${f.peer} --join ${via}`;
  if (m.promotionPending === false) {
    return [`added ${id} as a learner; it stays one (promote it later with: raftlock member promote ${id})`, ...(running ? [] : [start])].join('\n');
  }
  return [
    `added ${id} as a learner`,
    running ? 'it is running and catching up' : start,
    'it will be promoted to voter automatically once it has caught up (see: raftlock member list)',
  ].join('\n');
}

/** The leader's view (match index and lag are known there only); else whoever answered. */
async function leaderView(http: HttpCaller): Promise<ClusterInfo> {
  const any = decodeCluster((await http.call({ method: 'GET', path: '/v1/cluster', retry: 'read' })).body, 'cluster');
  if (any.role === 'leader' || any.leaderId === null) return any;
  const api = any.members.find((m) => m.id === any.leaderId)?.api;
  if (!api) return any;
  try {
    return decodeCluster((await http.call({ method: 'GET', path: '/v1/cluster', retry: 'read', endpoint: api })).body, 'cluster');
  } catch {
    return any;
  }
}

export function formatMembers(v: ClusterInfo): string {
  const role = (m: ClusterInfo['members'][number]): string => (m.role === 'learner' && m.promotionPending ? 'learner (promotion pending)' : m.role ?? '-');
  const rows = v.members.map((m) => [m.id, role(m), m.matchIndex === undefined ? '-' : String(m.matchIndex), m.lag === undefined ? '-' : String(m.lag), m.api, m.peer]);
  return [`leader: ${v.leaderId ?? 'none'}  term: ${v.term}  commit: ${v.commitIndex}`, formatTable(['ID', 'ROLE', 'MATCH', 'LAG', 'API', 'PEER'], rows)].join('\n');
}

/** Like runClientCommand, with an HttpCaller (cluster operations are not in the SDK) and
 *  a clear line for 409 (a change in progress, or an address conflict). */
async function run(name: string, f: ClientFlags, fn: (http: HttpCaller) => Promise<number>): Promise<void> {
  let http: HttpCaller | undefined;
  try {
    http = caller(f);
    process.exitCode = await fn(http);
  } catch (err) {
    if (err instanceof RaftlockError && err.code === 'conflict') {
      process.stderr.write(`raftlock ${name}: ${err.message}\n`);
      if (f.json) printJson({ error: { code: err.code, message: err.message } });
      process.exitCode = EXIT.held;
    } else if (err instanceof RaftlockError && err.code === 'not_found') {
      process.stderr.write(`raftlock ${name}: ${err.message}; see \`raftlock member list\`\n`);
      process.exitCode = EXIT.usage;
    } else {
      process.exitCode = reportError(name, err, f.json === true);
    }
  } finally {
    await http?.close().catch(() => undefined);
  }
}

function caller(f: ClientFlags): HttpCaller {
  const { endpoints, token, ca } = connection(f);
  const timeoutMs = durationFlag(f.timeout, '--timeout', 1);
  return new HttpCaller({
    endpoints: endpoints.map((e) => e.replace(/\/$/, '')),
    timeoutMs,
    retryBudgetMs: Math.max(15_000, 2 * timeoutMs),
    now: () => performance.now(),
    random: Math.random,
    ...(token ? { token } : {}),
    ...(ca ? { tls: { ca } } : {}),
  });
}
