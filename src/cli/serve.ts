// `raftlock serve`: one node in the foreground, JSON logs (pino) on stdout. A bad config
// file or a damaged data directory stops it with one clear line on stderr, exit code 2.
import pino from 'pino';
import { ConfigError, loadConfig } from '../config.js';
import { startNode } from '../server/compose.js';
import { StorageError } from '../raft/storage/level-storage.js';
import { joinConfig } from './join-config.js';
import { memoryTuning } from './serve-runtime.js';
import { watchLauncher } from './launcher-watch.js';
import { AmnesiaError } from '../server/membership/amnesia-check.js';

export interface ServeOptions {
  /** required unless join is given */
  config?: string;
  node: string;
  dataDir?: string;
  logLevel: string;
  /** `--join URL [--api URL --peer URL]`: join a running cluster (docs/membership.md) */
  join?: { url: string; api?: string; peer?: string };
}

export async function serve(opts: ServeOptions): Promise<void> {
  let config;
  try {
    if (opts.join) config = await joinConfig({ node: opts.node, join: opts.join, ...(opts.config !== undefined ? { config: opts.config } : {}) });
    else if (opts.config !== undefined) config = loadConfig(opts.config);
    else return failStart('serve: --config <file> is required (or --join <url>)');
  } catch (err) {
    if (err instanceof ConfigError) return failStart(err.message);
    throw err;
  }
  // every line carries the node id and, once Raft runs, the current term (spec: logs with
  // node id, term and request id; fastify adds reqId to request-bound lines)
  let currentTerm: () => number | undefined = () => undefined;
  const logger = pino({ level: opts.logLevel, base: { node: opts.node }, mixin: () => ({ term: currentTerm() }) });
  // A broken invariant or a bug stops the node (fail-stop), but never silently: the reason
  // goes to the node's JSON log, where operators look, not only to stderr.
  const die = (what: string) => (err: unknown): void => {
    logger.fatal({ err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, `${what}: stopping the node`);
    logger.flush();
    process.exit(70);
  };
  const tuning = memoryTuning();
  if (!tuning.malloc || !tuning.semiSpace) {
    logger.warn({ memoryTuning: tuning }, 'memory settings for serve are not applied (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_, --max-semi-space-size): resident memory may be ~1.5-2x higher; see docs/operations.md "Memory"');
  }
  process.on('uncaughtException', die('uncaught exception'));
  process.on('unhandledRejection', die('unhandled rejection'));
  let node;
  try {
    node = await startNode({
      config,
      nodeId: opts.node,
      ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}),
      ...(opts.join ? { join: { url: opts.join.url, ...(process.env.RAFTLOCK_TOKEN ? { token: process.env.RAFTLOCK_TOKEN } : {}) } } : {}),
      logger,
      onFatal: (err) => {
        if (err instanceof AmnesiaError) {
          // a member that lost its data: one line saying what to do (docs/membership.md)
          logger.fatal({ err: err.message }, 'this node lost its data: stopping');
          logger.flush();
          process.stderr.write(`${err.message}\n`);
          process.exit(2);
        }
        // fail-stop: the disk state is unknown; never retry-and-continue
        logger.flush();
        process.exit(70);
      },
    });
  } catch (err) {
    if (err instanceof ConfigError || err instanceof StorageError || err instanceof AmnesiaError) return failStart(err.message);
    if (err instanceof Error && 'code' in err && err.code === 'EADDRINUSE') return failStart(`raftlock: ${err.message} (is another node running?)`);
    throw err;
  }
  const running = node;
  currentTerm = () => running.driver.currentTerm;
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    node.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err: (err as Error).message }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // started by `raftlock cluster`: stop with it, also when it was killed (launcher-watch.ts)
  watchLauncher((pid) => {
    logger.warn({ launcher: pid }, 'raftlock cluster (the launcher of this node) is gone: stopping');
    stop('launcher gone');
  });
  // docs/security.md "Reloading on SIGHUP": new certificates / tokens.json / cluster secret
  // without a restart
  process.on('SIGHUP', () => node.reloadSecurity());
}

function failStart(line: string): void {
  process.stderr.write(`${line}\n`);
  process.exitCode = 2;
}
