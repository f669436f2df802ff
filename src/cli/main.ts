// The `raftlock` command line (docs/contract.md §1 "Command line"). Each subcommand lives
// in its own file; this file only registers them and turns commander's own errors into exit
// code 2.
import { Command, Option } from 'commander';
import { resolve } from 'node:path';
import { ConfigError, loadConfig } from '../config.js';
import { clusterWatchAccess, runCluster } from './cluster.js';
import { writeDefaultClusterFile } from './default-cluster.js';
import { DEFAULT_CONFIG, UsageError } from './commands/common.js';
import { registerStatus } from './commands/status.js';
import { registerLock } from './commands/lock.js';
import { registerSemaphore } from './commands/semaphore.js';
import { registerElect } from './commands/elect.js';
import { registerAcquire } from './commands/acquire.js';
import { registerRelease } from './commands/release.js';
import { registerRevoke } from './commands/revoke.js';
import { registerRenew } from './commands/renew.js';
import { registerGet } from './commands/get.js';
import { registerLs } from './commands/ls.js';
import { registerCheck } from './commands/check.js';
import { registerSession } from './commands/session.js';
import { registerMember, registerTransferLeader } from './commands/member.js';
import { registerCerts } from './commands/certs.js';
import { registerSnapshot } from './commands/snapshot.js';
import { registerWatch } from './commands/watch.js';
import { serveOptions } from './serve-options.js';

export { resolveEndpoints, UsageError } from './commands/common.js';

export function buildProgram(): Command {
  const program = new Command('raftlock')
    .description('a distributed lock service on Raft: TTL sessions, fencing tokens, FIFO waiters')
    .showHelpAfterError()
    .exitOverride()
    .addHelpText('after', '\nExit codes: 0 ok, 1 lock held / not holder / token not current, 2 usage, 3 unavailable,\n4 session or lock lost, 5 permission denied, 6 unexpected server answer; `lock` returns its command\'s code.');

  program
    .command('serve')
    .description('run one node of the cluster in the foreground (JSON logs on stdout)')
    .option('--config <file>', 'cluster file (required unless --join)')
    .requiredOption('--node <id>', 'this node\'s id (in the cluster file, or a new one with --join)')
    .option('--data-dir <dir>', 'data directory (default: <data_dir>/<id>)')
    .option('--join <url>', 'join a running cluster through the API URL of any member (docs/membership.md)')
    .option('--api <url>', 'with --join: this node\'s advertised API URL')
    .option('--peer <url>', 'with --join: this node\'s advertised peer URL')
    .addOption(new Option('--log-level <level>', 'log level').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'))
    .option('--endpoints <urls>', 'ignored by serve; accepted for uniformity')
    .action(async (o: { config?: string; node: string; dataDir?: string; logLevel: string; join?: string; api?: string; peer?: string }) => {
      // loaded on demand: the server stack (fastify, LevelDB, …) would slow every client command
      const { serve } = await import('./serve.js');
      await serve(serveOptions(o));
    });

  program
    .command('cluster')
    .description('run every node of the cluster file as child processes on this machine (Ctrl-C stops them all); without a cluster.config.json here, writes a local 3-node one first')
    .option('--config <file>', 'cluster file', DEFAULT_CONFIG)
    .addOption(new Option('--log-level <level>', 'log level of the nodes').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'))
    .option('--endpoints <urls>', 'ignored by cluster; accepted for uniformity')
    .action(async (o: { config: string; logLevel: string }, cmd: Command) => {
      if (cmd.getOptionValueSource('config') === 'default' && writeDefaultClusterFile(o.config)) {
        console.error(`raftlock: no ${o.config} here; wrote a local 3-node one (API on 127.0.0.1:7001-7003, data in ./data)`);
      }
      const config = loadConfig(o.config);
      const code = await runCluster({
        configPath: resolve(o.config),
        nodes: config.nodes.map((n) => ({ id: n.id, api: n.api })),
        logDir: config.dataDir,
        logLevel: o.logLevel,
        watch: clusterWatchAccess(config),
      });
      process.exitCode = code;
    });

  // client commands (src/cli/commands/*): each maps its own failures to exit codes
  registerStatus(program);
  registerLock(program);
  registerSemaphore(program);
  registerElect(program);
  registerAcquire(program);
  registerRelease(program);
  registerRevoke(program);
  registerRenew(program);
  registerGet(program);
  registerLs(program);
  registerCheck(program);
  registerSession(program);
  registerMember(program);
  registerTransferLeader(program);
  registerCerts(program);
  registerSnapshot(program);
  registerWatch(program);

  return program;
}

/** A client command whose reader went away (`raftlock ls | head -1`, a closed terminal)
 *  ends quietly, as a Unix tool killed by SIGPIPE does, instead of dying with a stack trace
 *  on stderr. The server commands keep node's default: their stdout is the log. */
function endQuietlyOnClosedStdout(argv: string[]): void {
  if (argv[0] === 'serve' || argv[0] === 'cluster') return;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(process.exitCode ?? 0);
  });
}

export async function main(argv: string[]): Promise<void> {
  endQuietlyOnClosedStdout(argv);
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    const e = err as { code?: string; exitCode?: number; message?: string };
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      // commander already printed help or the usage error
      process.exitCode = e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help' ? 0 : 2;
      return;
    }
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  }
}
