// The `raftlock` command line (spec §1). Each subcommand lives in its own file.
import { Command, Option } from 'commander';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, loadConfig } from '../config.js';
import { serve } from './serve.js';
import { runCluster } from './cluster.js';
import { clusterTable } from './status.js';

const DEFAULT_CONFIG = 'cluster.config.json';

/** --endpoints, else RAFTLOCK_ENDPOINTS, else the API URLs of cluster.config.json */
export function resolveEndpoints(flag: string | undefined, configPath = DEFAULT_CONFIG): string[] {
  const raw = flag ?? process.env.RAFTLOCK_ENDPOINTS;
  if (raw) return raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (existsSync(configPath)) return loadConfig(configPath).nodes.map((n) => n.api);
  throw new UsageError(`no endpoints: pass --endpoints URL,… or set RAFTLOCK_ENDPOINTS (no ${configPath} here)`);
}

export class UsageError extends Error {}

export function buildProgram(): Command {
  const program = new Command('raftlock')
    .description('a distributed lock service on Raft: TTL sessions, fencing tokens, FIFO waiters')
    .showHelpAfterError()
    .exitOverride();

  program
    .command('serve')
    .description('run one node of the cluster in the foreground (JSON logs on stdout)')
    .requiredOption('--config <file>', 'cluster file')
    .requiredOption('--node <id>', 'this node\'s id in the cluster file')
    .option('--data-dir <dir>', 'data directory (default: <data_dir>/<id>)')
    .addOption(new Option('--log-level <level>', 'log level').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'))
    .option('--endpoints <urls>', 'ignored by serve; accepted for uniformity')
    .action(async (o: { config: string; node: string; dataDir?: string; logLevel: string }) => {
      await serve({ config: o.config, node: o.node, logLevel: o.logLevel, ...(o.dataDir !== undefined ? { dataDir: o.dataDir } : {}) });
    });

  program
    .command('cluster')
    .description('run every node of the cluster file as child processes on this machine (Ctrl-C stops them all)')
    .option('--config <file>', 'cluster file', DEFAULT_CONFIG)
    .addOption(new Option('--log-level <level>', 'log level of the nodes').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'))
    .option('--endpoints <urls>', 'ignored by cluster; accepted for uniformity')
    .action(async (o: { config: string; logLevel: string }) => {
      const config = loadConfig(o.config);
      const code = await runCluster({
        configPath: resolve(o.config),
        nodes: config.nodes.map((n) => ({ id: n.id, api: n.api })),
        logDir: config.dataDir,
        logLevel: o.logLevel,
      });
      process.exitCode = code;
    });

  program
    .command('status')
    .description('print the cluster: members, roles, leader, term, commit/applied index, lag')
    .option('--endpoints <urls>', 'comma-separated API URLs (default: RAFTLOCK_ENDPOINTS or cluster.config.json)')
    .action(async (o: { endpoints?: string }) => {
      console.log(await clusterTable(resolveEndpoints(o.endpoints)));
    });

  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    const e = err as { code?: string; exitCode?: number; message?: string };
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      // commander already printed help or the usage error
      process.exitCode = e.code === 'commander.helpDisplayed' || e.code === 'commander.version' ? 0 : 2;
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

