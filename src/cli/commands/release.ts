// `raftlock release NAME --session ID [--token N]`: give a lock up.
import type { Command } from 'commander';
import { intFlag, printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';

interface Flags extends ClientFlags {
  session: string;
  token?: string;
  fencingToken?: string;
  idempotencyKey?: string;
}

export function registerRelease(program: Command): void {
  withClientOptions(
    program
      .command('release')
      .description('release a lock held by a session; exit 1 if the session does not hold it')
      .argument('<name>', 'lock name')
      .requiredOption('--session <id>', 'the holder session')
      .option('--fencing-token <n>', 'only release if this token still holds it (a stale holder gets exit 1)')
      .option('--idempotency-key <key>', 'repeat an earlier call safely (after an unknown outcome)'),
  ).action(async (name: string, f: Flags) =>
    runClientCommand('release', f, async (client) => {
      const token = f.fencingToken !== undefined ? intFlag(f.fencingToken, '--fencing-token', 1, Number.MAX_SAFE_INTEGER) : undefined;
      await client.release(name, f.session, token, f.idempotencyKey !== undefined ? { idempotencyKey: f.idempotencyKey } : {});
      if (f.json) printJson({ name, released: true });
      else console.log(`released ${name}`);
      return 0;
    }),
  );
}
