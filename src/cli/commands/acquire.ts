// `raftlock acquire NAME`: one acquire call for scripts. Without --session the server opens
// a new session with --ttl; NOTHING keeps it alive afterwards (use `raftlock lock` for that,
// or `raftlock session keepalive`/`renew` from the script).
import type { Command } from 'commander';
import { formatDuration } from '@raftlock/client';
import { durationFlag, printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';
import { maxHoldFlag } from './lock.js';

interface Flags extends ClientFlags {
  session?: string;
  ttl?: string;
  wait: string;
  owner?: string;
  idempotencyKey?: string;
  maxHold?: string;
}

export function registerAcquire(program: Command): void {
  withClientOptions(
    program
      .command('acquire')
      .description('take a lock once (prints the fencing token); exit 1 if it is held')
      .argument('<name>', 'lock name')
      .option('--session <id>', 'hold it in this session (default: the server opens a new one)')
      .option('--ttl <duration>', 'ttl of the new session (without --session)')
      .option('--wait <duration>', 'wait in the FIFO queue this long', '0s')
      .option('--owner <text>', 'who holds it (shown to others)')
      .option('--max-hold <duration>', 'the server frees it this long after granting it, even while the session lives')
      .option('--idempotency-key <key>', 'repeat an earlier call safely (after an unknown outcome)'),
  ).action(async (name: string, f: Flags) =>
    runClientCommand('acquire', f, async (client) => {
      const g = await client.acquire(name, {
        waitMs: durationFlag(f.wait, '--wait'),
        ...(f.session !== undefined ? { sessionId: f.session } : {}),
        ...(f.ttl !== undefined ? { ttlMs: durationFlag(f.ttl, '--ttl', 1) } : {}),
        ...(f.owner !== undefined ? { owner: f.owner } : {}),
        ...maxHoldFlag(f.maxHold),
        ...(f.idempotencyKey !== undefined ? { idempotencyKey: f.idempotencyKey } : {}),
      });
      const out = { name: g.name, sessionId: g.sessionId, fencingToken: g.fencingToken, ttlMs: g.ttlMs };
      if (f.json) printJson(out);
      else console.log(`acquired ${g.name}: fencing token ${g.fencingToken}, session ${g.sessionId}, ttl ${formatDuration(g.ttlMs)}`);
      return 0;
    }),
  );
}
