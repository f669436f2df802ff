// `raftlock get NAME`: who holds a lock (linearizable unless --stale).
import type { Command } from 'commander';
import type { LockInfo } from '@raftlock/client';
import { printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';

interface Flags extends ClientFlags {
  stale?: boolean;
}

export function describeLock(l: LockInfo): string {
  const waiters = `${l.waiters} waiter${l.waiters === 1 ? '' : 's'}`;
  const shares = l.mode === 'shared' ? l.holders ?? [] : [];
  if (shares.length > 0) {
    const who = shares.map((h) => `${h.sessionId}${h.owner ? ` (owner ${h.owner})` : ''} token ${h.fencingToken}`).join(', ');
    return `${l.name}: held shared by ${shares.length} session${shares.length === 1 ? '' : 's'}: ${who}; ${waiters}`;
  }
  if (!l.held || !l.holder) return `${l.name}: free${l.held ? ' (in lock-delay)' : ''}, ${waiters}`;
  const owner = l.holder.owner ? ` (owner ${l.holder.owner})` : '';
  return `${l.name}: held by session ${l.holder.sessionId}${owner}, fencing token ${l.holder.fencingToken}, ${waiters}`;
}

export function registerGet(program: Command): void {
  withClientOptions(
    program
      .command('get')
      .description('show who holds a lock')
      .argument('<name>', 'lock name')
      .option('--stale', 'answer from the contacted node without a quorum round'),
  ).action(async (name: string, f: Flags) =>
    runClientCommand('get', f, async (client) => {
      const l = await client.getLock(name, { consistency: f.stale ? 'stale' : 'linearizable' });
      if (f.json) printJson(l);
      else console.log(describeLock(l));
      return 0;
    }),
  );
}
