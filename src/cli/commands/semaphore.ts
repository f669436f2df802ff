// `raftlock semaphore NAME --limit N [--permits K] -- CMD ARGS…` (like `consul lock -n N`):
// take K permits of the semaphore NAME of limit N, run CMD while a session keeps them,
// give them back when CMD exits, exit with CMD's code. Everything else — signals, the
// lease proof that stops CMD before the server could expire the session, exit codes — is
// `raftlock lock`'s (lock.ts), whose code this shares.
//
// CMD gets RAFTLOCK_FENCING_TOKEN, RAFTLOCK_SESSION_ID, RAFTLOCK_SEMAPHORE and
// RAFTLOCK_PERMITS in its environment.
import type { Command } from 'commander';
import type { SemaphoreGrant } from '@raftlock/client';
import { reportError, UsageError, withClientOptions } from './common.js';
import { holdOptions, holdWhileRunning, maxHoldFlag, type HoldFlags } from './lock.js';

interface Flags extends HoldFlags {
  limit?: string;
  permits: string;
}

export function registerSemaphore(program: Command): void {
  withClientOptions(
    holdOptions(program
      .command('semaphore')
      .description("hold permits of a semaphore while a command runs; exits with the command's code (4 if the permits were lost)")
      .argument('<name>', 'semaphore name')
      .argument('<command...>', 'the command and its arguments, after --'), 'semaphore',
    )
      .option('--limit <n>', 'the semaphore\'s limit (1-10000); must match the limit it is busy with')
      .option('--permits <k>', 'permits to take (at most --limit)', '1')
      .addHelpText('after', '\nExample:\n  raftlock semaphore db-migrations --limit 2 --wait 5m -- ./migrate.sh\n\nThe command sees RAFTLOCK_FENCING_TOKEN, RAFTLOCK_SESSION_ID, RAFTLOCK_SEMAPHORE and RAFTLOCK_PERMITS.'),
  ).action(async (name: string, command: string[], f: Flags) => {
    process.exitCode = await runSemaphore(name, command, f);
  });
}

export async function runSemaphore(name: string, command: string[], f: Flags): Promise<number> {
  let limit: number, permits: number, maxHold: { maxHoldMs?: number };
  try {
    limit = whole(f.limit, '--limit');
    permits = whole(f.permits, '--permits');
    maxHold = maxHoldFlag(f.maxHold);
  } catch (err) {
    return reportError('semaphore', err, f.json === true);
  }
  return holdWhileRunning<SemaphoreGrant>('semaphore', name, command, f,
    (session, o) => session.semaphore(name, { limit, permits, waitMs: o.waitMs, owner: o.owner, signal: o.signal, ...maxHold }),
    (g) => ({ RAFTLOCK_SEMAPHORE: g.name, RAFTLOCK_PERMITS: String(g.permits) }));
}

function whole(v: string | undefined, flag: string): number {
  if (v === undefined) throw new UsageError(`${flag} is required`);
  if (!/^[0-9]+$/.test(v)) throw new UsageError(`${flag} must be a whole number, got ${JSON.stringify(v)}`);
  return Number(v);
}
