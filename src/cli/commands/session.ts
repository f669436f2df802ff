// `raftlock session open|keepalive|get|close`: sessions for scripts. A script that opens a
// session must keep it alive itself (`session keepalive ID` well within the ttl) and close
// it; `raftlock lock` does all of that for a single command.
import type { Command } from 'commander';
import { formatDuration } from '@raftlock/client';
import { durationFlag, printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';

interface OpenFlags extends ClientFlags {
  ttl?: string;
  owner?: string;
  lockDelay?: string;
  idempotencyKey?: string;
}

export function registerSession(program: Command): void {
  const session = program.command('session').description('open, renew, inspect or close a session (TTL lease)');

  withClientOptions(
    session
      .command('open')
      .description('open a session and print its id')
      .option('--ttl <duration>', 'lease length (default: the cluster default)')
      .option('--owner <text>', 'who owns it (shown as lock owner)')
      .option('--lock-delay <duration>', "how long its locks stay unavailable after it expires (Chubby's lock-delay)")
      .option('--idempotency-key <key>', 'repeat an earlier call safely (after an unknown outcome)'),
  ).action(async (f: OpenFlags) =>
    runClientCommand('session open', f, async (client) => {
      const s = await client.openSession({
        ...(f.ttl !== undefined ? { ttlMs: durationFlag(f.ttl, '--ttl', 1) } : {}),
        ...(f.owner !== undefined ? { owner: f.owner } : {}),
        ...(f.lockDelay !== undefined ? { lockDelayMs: durationFlag(f.lockDelay, '--lock-delay') } : {}),
        ...(f.idempotencyKey !== undefined ? { idempotencyKey: f.idempotencyKey } : {}),
      });
      if (f.json) printJson({ sessionId: s.sessionId, ttlMs: s.ttlMs });
      else console.log(`${s.sessionId}\t(ttl ${formatDuration(s.ttlMs)})`);
      return 0;
    }),
  );

  withClientOptions(session.command('keepalive').description('renew a session (and every lock it holds)').argument('<id>', 'session id')).action(
    async (id: string, f: ClientFlags) =>
      runClientCommand('session keepalive', f, async (client) => {
        const s = await client.keepalive(id);
        if (f.json) printJson({ sessionId: s.sessionId, ttlMs: s.ttlMs });
        else console.log(`renewed session ${s.sessionId} (ttl ${formatDuration(s.ttlMs)})`);
        return 0;
      }),
  );

  withClientOptions(session.command('get').description('show a session and the locks it holds').argument('<id>', 'session id')).action(
    async (id: string, f: ClientFlags) =>
      runClientCommand('session get', f, async (client) => {
        const s = await client.getSession(id);
        if (f.json) printJson(s);
        else console.log(`session ${s.sessionId}${s.owner ? ` (owner ${s.owner})` : ''}, ttl ${formatDuration(s.ttlMs)}, locks: ${s.locks.length ? s.locks.join(', ') : 'none'}`);
        return 0;
      }),
  );

  withClientOptions(session.command('close').description('end a session; its locks are released at once').argument('<id>', 'session id')).action(
    async (id: string, f: ClientFlags) =>
      runClientCommand('session close', f, async (client) => {
        const r = await client.closeSession(id);
        if (f.json) printJson({ sessionId: id, released: r.released });
        else console.log(`closed session ${id}; released: ${r.released.length ? r.released.join(', ') : 'nothing'}`);
        return 0;
      }),
  );
}
