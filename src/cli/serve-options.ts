// `raftlock serve` flags → ServeOptions: --config is required unless --join, and --api /
// --peer belong to --join. Mistakes are usage errors (one line, exit code 2).
import { UsageError } from './commands/common.js';
import type { ServeOptions } from './serve.js';

export interface ServeFlags {
  config?: string;
  node: string;
  dataDir?: string;
  logLevel: string;
  join?: string;
  api?: string;
  peer?: string;
}

export function serveOptions(f: ServeFlags): ServeOptions {
  if (f.join === undefined) {
    if (f.config === undefined) throw new UsageError("serve: --config <file> is required (or --join <url> to join a running cluster); see --help");
    if (f.api !== undefined || f.peer !== undefined) throw new UsageError('serve: --api/--peer only go with --join (otherwise the cluster file gives the URLs)');
  }
  return {
    node: f.node,
    logLevel: f.logLevel,
    ...(f.config !== undefined ? { config: f.config } : {}),
    ...(f.dataDir !== undefined ? { dataDir: f.dataDir } : {}),
    ...(f.join !== undefined
      ? { join: { url: f.join.replace(/\/$/, ''), ...(f.api !== undefined ? { api: f.api } : {}), ...(f.peer !== undefined ? { peer: f.peer } : {}) } }
      : {}),
  };
}
