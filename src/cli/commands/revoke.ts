// `raftlock revoke NAME [--session ID] [--semaphore]`: an operator takes a lock (or a
// semaphore's permits) away from a stuck holder — that session's grant, or every grant of
// the name — at once and without lock-delay; the next waiter gets it with a larger token.
// Needs the `admin` right on the name (docs/security.md). The holder's session stays
// alive; it learns of the loss from its next renew (docs/contract.md §4 "Revocation and
// maximum hold").
import type { Command } from 'commander';
import { printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';

interface Flags extends ClientFlags {
  session?: string;
  semaphore?: boolean;
  idempotencyKey?: string;
}

export function registerRevoke(program: Command): void {
  withClientOptions(
    program
      .command('revoke')
      .description("take a lock's grant away from its holder (the admin right); exit 1 if --session holds none")
      .argument('<name>', 'lock (or, with --semaphore, semaphore) name')
      .option('--session <id>', "revoke only this session's grant (default: every grant of the name)")
      .option('--semaphore', 'NAME is a semaphore: revoke its permits')
      .option('--idempotency-key <key>', 'repeat an earlier call safely (after an unknown outcome)'),
  ).action(async (name: string, f: Flags) =>
    runClientCommand('revoke', f, async (client) => {
      const revoked = await client.revoke(name, {
        ...(f.session !== undefined ? { sessionId: f.session } : {}),
        ...(f.semaphore === true ? { kind: 'semaphore' as const } : {}),
        ...(f.idempotencyKey !== undefined ? { idempotencyKey: f.idempotencyKey } : {}),
      });
      const what = f.semaphore === true ? 'semaphore' : 'lock';
      if (f.json) printJson({ name, kind: what, revoked });
      else if (revoked.length === 0) console.log(`${what} ${name}: nothing was held`);
      else for (const g of revoked) console.log(`revoked ${what} ${name} from session ${g.sessionId} (fencing token ${g.fencingToken})`);
      return 0;
    }),
  );
}
