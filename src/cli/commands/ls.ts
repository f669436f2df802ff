// `raftlock ls [--prefix P]`: the held locks as a table.
import type { Command } from 'commander';
import { intFlag, printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';
import { formatTable } from './table.js';

interface Flags extends ClientFlags {
  prefix?: string;
  limit?: string;
  stale?: boolean;
}

export function registerLs(program: Command): void {
  withClientOptions(
    program
      .command('ls')
      .description('list held locks')
      .option('--prefix <prefix>', 'only names starting with this')
      .option('--limit <n>', 'at most this many (1-10000, server default 1000)')
      .option('--stale', 'answer from the contacted node without a quorum round'),
  ).action(async (f: Flags) =>
    runClientCommand('ls', f, async (client) => {
      const locks = await client.listLocks({
        consistency: f.stale ? 'stale' : 'linearizable',
        ...(f.prefix !== undefined ? { prefix: f.prefix } : {}),
        ...(f.limit !== undefined ? { limit: intFlag(f.limit, '--limit', 1, 10_000) } : {}),
      });
      if (f.json) {
        printJson({ locks });
        return 0;
      }
      if (locks.length === 0) {
        console.log('no locks held');
        return 0;
      }
      const rows = locks.map((l) => [l.name, String(l.holder?.fencingToken ?? '-'), l.holder?.sessionId ?? '-', l.holder?.owner || '-', String(l.waiters)]);
      console.log(formatTable(['NAME', 'TOKEN', 'SESSION', 'OWNER', 'WAITERS'], rows));
      return 0;
    }),
  );
}
