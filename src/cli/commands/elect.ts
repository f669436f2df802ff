// `raftlock elect NAME --value V -- CMD ARGS…` (like `etcdctl elect NAME PROPOSAL`):
// campaign in election NAME with value V, run CMD while this process leads, resign when
// CMD exits (also after SIGINT/SIGTERM, which are forwarded to CMD), then close the
// session it opened, and exit with CMD's code. Everything else — signals, the lease proof that stops
// CMD (SIGTERM, then SIGKILL after --kill-grace, exit 4) the moment leadership can no
// longer be proven, exit codes — is `raftlock lock`'s (lock.ts), whose code this shares.
// Leadership is also lost when a check after a keepalive finds another token leads (a
// revoke): the SDK aborts the leadership's signal (docs/client.md "Elections").
//
// CMD gets RAFTLOCK_FENCING_TOKEN (the leader's epoch: pass it with every write),
// RAFTLOCK_SESSION_ID, RAFTLOCK_ELECTION and RAFTLOCK_VALUE in its environment.
//
// `raftlock leader NAME`: a one-shot read of the leader and its value (linearizable
// unless --stale), beside `raftlock get` for locks.
import type { Command } from 'commander';
import type { ElectionInfo, Leadership } from '@raftlock/client';
import { printJson, reportError, runClientCommand, UsageError, withClientOptions, type ClientFlags } from './common.js';
import { holdOptions, holdWhileRunning, maxHoldFlag, type HoldFlags } from './lock.js';

interface Flags extends HoldFlags {
  value?: string;
}

export function registerElect(program: Command): void {
  withClientOptions(
    holdOptions(program
      .command('elect')
      .description("campaign for leadership and run a command while leader; exits with the command's code (4 if leadership was lost)")
      .argument('<name>', 'election name (the rules of a lock name)')
      .argument('<command...>', 'the command and its arguments, after --'), 'leadership',
    )
      .option('--value <text>', "the leader's published value (up to 4 KiB of UTF-8), e.g. its address; read it with `raftlock leader NAME`")
      .addHelpText('after', '\nExample:\n  raftlock elect scheduler --value "$(hostname):8080" --wait 1h -- ./scheduler\n\nThe command sees RAFTLOCK_FENCING_TOKEN, RAFTLOCK_SESSION_ID, RAFTLOCK_ELECTION and RAFTLOCK_VALUE.\n--wait is how long to stay a candidate before giving up (exit 1).'),
  ).action(async (name: string, command: string[], f: Flags) => {
    process.exitCode = await runElect(name, command, f);
  });

  withClientOptions(
    program
      .command('leader')
      .description("show an election's leader and its value")
      .argument('<name>', 'election name')
      .option('--stale', 'answer from the contacted node without a quorum round'),
  ).action(async (name: string, f: ClientFlags & { stale?: boolean }) =>
    runClientCommand('leader', f, async (client) => {
      const e = await client.getLeader(name, { consistency: f.stale ? 'stale' : 'linearizable' });
      if (f.json) printJson(e);
      else console.log(describeElection(e));
      // like `raftlock check`: a script can branch on "is there a leader"
      return e.leader === null ? 1 : 0;
    }),
  );
}

export function describeElection(e: ElectionInfo): string {
  if (e.leader === null) return `${e.name}: no leader`;
  return `${e.name}: led by session ${e.leader.sessionId}, fencing token ${e.leader.fencingToken}, value ${JSON.stringify(e.leader.value)}`;
}

export async function runElect(name: string, command: string[], f: Flags): Promise<number> {
  if (f.value === undefined) return reportError('elect', new UsageError('--value is required (the value the leader publishes; "" is allowed)'), f.json === true);
  const value = f.value;
  let maxHold: { maxHoldMs?: number };
  try {
    maxHold = maxHoldFlag(f.maxHold);
  } catch (err) {
    return reportError('elect', err, f.json === true);
  }
  return holdWhileRunning<Leadership>('elect', name, command, f,
    (session, o) => session.campaign(name, value, { waitMs: o.waitMs, owner: o.owner, signal: o.signal, ...maxHold }),
    (l) => ({ RAFTLOCK_ELECTION: l.name, RAFTLOCK_VALUE: l.value }),
    // resign, not just close the session: the next candidate leads at once and watchers
    // see `resigned` (docs/contract.md §4 "Leader election")
    (l) => l.resign());
}
