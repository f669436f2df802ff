// `raftlock check NAME --fencing-token N`: does this token still hold the lock? Exit 0 if so,
// 1 if not — a script's CheckSequencer before it touches a resource.
import type { Command } from 'commander';
import { EXIT, intFlag, printJson, runClientCommand, withClientOptions, type ClientFlags } from './common.js';

interface Flags extends ClientFlags {
  fencingToken: string;
}

export function registerCheck(program: Command): void {
  withClientOptions(
    program
      .command('check')
      .description('exit 0 if the fencing token still holds the lock, 1 if not')
      .argument('<name>', 'lock name')
      .requiredOption('--fencing-token <n>', 'the token to check (default: RAFTLOCK_FENCING_TOKEN)', process.env.RAFTLOCK_FENCING_TOKEN),
  ).action(async (name: string, f: Flags) =>
    runClientCommand('check', f, async (client) => {
      const token = intFlag(f.fencingToken, '--fencing-token', 1, Number.MAX_SAFE_INTEGER);
      const current = await client.checkToken(name, token);
      if (f.json) printJson({ name, fencingToken: token, current });
      else console.log(current ? `token ${token} holds ${name}` : `token ${token} does not hold ${name}`);
      return current ? EXIT.ok : EXIT.held;
    }),
  );
}
