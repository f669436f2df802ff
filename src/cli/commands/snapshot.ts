// `raftlock snapshot save|restore|inspect` (docs/operations.md "Backup and restore"):
// like `etcdctl snapshot save` and `etcdutl snapshot restore`. save takes a consistent
// backup through the leader; restore seeds ONE node's empty data directory of a NEW
// cluster (run it for every node, with the same file); inspect verifies a file and prints
// what it holds.
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../../config.js';
import { BackupFormatError, decodeBackup, sha256Hex, type BackupMeta } from '../../server/ops/format/backup-file.js';
import { CliExit, DEFAULT_CONFIG, EXIT, durationFlag, intFlag, printJson, reportError, resolveEndpoints, runClientCommand, withClientOptions, type ClientFlags } from './common.js';
import { saveSnapshot } from './snapshot-save.js';

interface SaveFlags extends ClientFlags {
  force?: boolean;
}

function describeMeta(m: BackupMeta): string {
  return [
    `cluster ${JSON.stringify(m.cluster)}, taken ${m.created_at} from leader ${m.source_node} (raftlock ${m.raftlock_version})`,
    `index ${m.index}, term ${m.term}, members ${m.conf.voters.join(',')}${m.conf.learners.length ? ` (learners ${m.conf.learners.join(',')})` : ''}`,
    `${m.sessions} sessions, ${m.locks_held} locks held, ${m.waiters} waiters, last fencing token ${m.last_token}`,
  ].join('\n  ');
}

function readBackupFile(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new CliExit(EXIT.usage, `${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/** The same one-line-and-exit-code handling as the client commands, for the local ones. */
async function runLocal(name: string, json: boolean, fn: () => Promise<number>): Promise<void> {
  try {
    process.exitCode = await fn();
  } catch (err) {
    if (err instanceof BackupFormatError || (err instanceof Error && err.name === 'RestoreError')) {
      const line = err instanceof BackupFormatError ? `the backup cannot be used: ${err.message}` : err.message;
      process.stderr.write(`raftlock snapshot ${name}: ${line}\n`);
      if (json) printJson({ error: { code: err instanceof BackupFormatError ? 'bad_backup' : 'restore_refused', message: line } });
      process.exitCode = EXIT.usage;
      return;
    }
    process.exitCode = reportError(`snapshot ${name}`, err, json);
  }
}

export function registerSnapshot(program: Command): void {
  const snap = program.command('snapshot').description('back up a cluster and restore it into a new one (docs/operations.md)');

  withClientOptions(
    snap
      .command('save')
      .description('save a consistent backup, taken through the leader, to FILE (checksummed, with metadata)')
      .argument('<file>', 'where to write the backup')
      .option('--force', 'replace FILE if it exists'),
  ).action(async (file: string, f: SaveFlags) =>
    runClientCommand('snapshot save', f, async (client) => {
      const r = await saveSnapshot(client, resolveEndpoints(f.endpoints, f.config ?? DEFAULT_CONFIG), {
        file,
        force: f.force === true,
        ...(f.token !== undefined ? { token: f.token } : {}),
        ...(f.caFile !== undefined ? { caFile: f.caFile } : {}),
        timeoutMs: Math.max(durationFlag(f.timeout, '--timeout', 1), 30_000),
        retryForMs: durationFlag(f.retryFor, '--retry-for', 1),
      });
      if (f.json) printJson({ file: r.file, bytes: r.bytes, sha256: r.sha256, from: r.from, meta: r.meta });
      else console.log(`saved ${r.file} (${r.bytes} bytes, sha256 ${r.sha256})\n  ${describeMeta(r.meta)}`);
      return 0;
    }),
  );

  snap
    .command('restore')
    .description("seed a NEW node's empty data directory from a backup; run it for every node of the new cluster file, then start them")
    .argument('<file>', 'a backup written by `raftlock snapshot save`')
    .requiredOption('--config <file>', 'the NEW cluster file')
    .requiredOption('--node <id>', 'the node of that file to seed')
    .option('--data-dir <dir>', "the node's data directory (default: <data_dir>/<id>)")
    .option('--token-floor <n>', 'make every new fencing token greater than N (when the lost cluster granted tokens after the backup)')
    .option('--json', 'print the result as JSON')
    .option('--endpoints <urls>', 'ignored; accepted for uniformity')
    .action(async (file: string, f: { config: string; node: string; dataDir?: string; tokenFloor?: string; json?: boolean }) =>
      runLocal('restore', f.json === true, async () => {
        const config = loadConfig(f.config);
        const tokenFloor = f.tokenFloor === undefined ? undefined : intFlag(f.tokenFloor, '--token-floor', 0, Number.MAX_SAFE_INTEGER);
        const bytes = readBackupFile(file);
        // loaded on demand: LevelDB and the lock FSM are not needed by the other commands
        const { restoreNode } = await import('../../server/ops/restore.js');
        const r = await restoreNode(bytes, config, f.node, { ...(f.dataDir !== undefined ? { dataDir: f.dataDir } : {}), ...(tokenFloor !== undefined ? { tokenFloor } : {}) });
        const floor = Math.max(r.index, r.tokenCounter);
        if (f.json) {
          printJson({ node: r.nodeId, data_dir: r.dataDir, index: r.index, term: r.term, voters: r.voters, sessions: r.sessions, locks_held: r.locksHeld, waiters: r.waiters, last_token: r.lastToken, next_token_above: floor, sha256: sha256Hex(bytes) });
        } else {
          console.log(`restored ${r.nodeId} into ${r.dataDir}\n  ${describeMeta(r.meta)}\n  new members ${r.voters.join(',')}; every new fencing token will be above ${floor}`);
          if (r.sourceCluster !== config.cluster) console.log(`  note: the backup is of cluster ${JSON.stringify(r.sourceCluster)}, the new file names ${JSON.stringify(config.cluster)}`);
          console.log(`  restore the SAME file (sha256 ${sha256Hex(bytes).slice(0, 16)}…) on every node of ${f.config} before starting any of them`);
        }
        return EXIT.ok;
      }),
    );

  snap
    .command('inspect')
    .description('verify a backup file (checksums, snapshot) and print its metadata')
    .argument('<file>', 'a backup written by `raftlock snapshot save`')
    .option('--json', 'print the metadata as JSON')
    .action(async (file: string, f: { json?: boolean }) =>
      runLocal('inspect', f.json === true, async () => {
        const bytes = readBackupFile(file);
        const { meta, payload } = decodeBackup(bytes);
        // the payload must also load as a lock state machine, not just hash right
        const { LockApp } = await import('../../server/app/lock-app.js');
        try {
          new LockApp({}, () => undefined).restore(payload, meta.index);
        } catch (err) {
          throw new BackupFormatError(`the snapshot inside does not load: ${(err as Error).message}`);
        }
        if (f.json) printJson({ file, bytes: bytes.length, sha256: sha256Hex(bytes), meta });
        else console.log(`${file}: ok (${bytes.length} bytes, sha256 ${sha256Hex(bytes)})\n  ${describeMeta(meta)}`);
        return EXIT.ok;
      }),
    );
}
