// `raftlock renew NAME --session ID`: renew the holder's session, proving it still holds NAME.
import type { Command } from 'commander';
import { formatDuration } from '@raftlock/client';
import { printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';

interface Flags extends ClientFlags {
  session: string;
}

export function registerRenew(program: Command): void {
  withClientOptions(
    program
      .command('renew')
      .description("renew a lock holder's session; exit 1 if the session no longer holds the lock")
      .argument('<name>', 'lock name')
      .requiredOption('--session <id>', 'the holder session'),
  ).action(async (name: string, f: Flags) =>
    runClientCommand('renew', f, async (client) => {
      const g = await client.renew(name, f.session);
      const out = { name: g.name, sessionId: g.sessionId, fencingToken: g.fencingToken, ttlMs: g.ttlMs };
      if (f.json) printJson(out);
      else console.log(`renewed ${g.name}: fencing token ${g.fencingToken}, session ${g.sessionId}, ttl ${formatDuration(g.ttlMs)}`);
      return 0;
    }),
  );
}
