// `raftlock ls [--prefix P]`: the held locks, with their mode and every holder (a shared
// lock has several), then the semaphores in use, with in-use/limit, their holders and how
// many wait (docs/client.md "CLI"). --prefix and --limit apply to each list.
import type { Command } from 'commander';
import { RaftlockError, type LockInfo, type SemaphoreInfo } from '@raftlock/client';
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
      .description('list held locks and semaphores in use')
      .option('--prefix <prefix>', 'only names starting with this')
      .option('--limit <n>', 'at most this many locks, and this many semaphores (1-10000, server default 1000)')
      .option('--stale', 'answer from the contacted node without a quorum round'),
  ).action(async (f: Flags) =>
    runClientCommand('ls', f, async (client) => {
      const o = {
        consistency: f.stale ? ('stale' as const) : ('linearizable' as const),
        ...(f.prefix !== undefined ? { prefix: f.prefix } : {}),
        ...(f.limit !== undefined ? { limit: intFlag(f.limit, '--limit', 1, 10_000) } : {}),
      };
      const locks = await client.listLocks(o);
      // a server of an earlier version has no list of semaphores: show its locks anyway
      const semaphores = await client.listSemaphores(o).catch((err: unknown) => {
        if (err instanceof RaftlockError && err.code === 'not_found') return undefined;
        throw err;
      });
      if (f.json) {
        printJson(semaphores === undefined ? { locks } : { locks, semaphores });
        return 0;
      }
      console.log(locks.length === 0 ? 'no locks held' : formatTable(['LOCK', 'MODE', 'TOKEN', 'SESSION', 'OWNER', 'WAITERS'], locks.flatMap(lockRows)));
      if (semaphores === undefined) console.log('(this server does not list semaphores)');
      else if (semaphores.length === 0) console.log('no semaphores in use');
      else console.log(`\n${formatTable(['SEMAPHORE', 'IN USE', 'PERMITS', 'TOKEN', 'SESSION', 'OWNER', 'WAITING'], semaphores.flatMap(semaphoreRows))}`);
      return 0;
    }),
  );
}

/** one row per holder (a shared lock has several); a lock in lock-delay has none */
export function lockRows(l: LockInfo): string[][] {
  const holders = l.holders ?? (l.holder ? [Object.assign({}, l.holder, { mode: 'exclusive' as const })] : []);
  if (holders.length === 0) return [[l.name, 'delay', '-', '-', '-', String(l.waiters)]];
  return holders.map((h) => [l.name, h.mode, String(h.fencingToken), h.sessionId, h.owner || '-', String(l.waiters)]);
}

/** one row per holder, with in-use/limit and the number of waiting requests */
export function semaphoreRows(s: SemaphoreInfo): string[][] {
  const use = `${s.inUse}/${s.limit}`;
  const waiting = String(s.waiters.length);
  if (s.holders.length === 0) return [[s.name, use, '-', '-', '-', '-', waiting]];
  return s.holders.map((h) => [s.name, use, String(h.permits), String(h.fencingToken), h.sessionId, h.owner || '-', waiting]);
}
