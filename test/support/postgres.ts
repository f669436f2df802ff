// A throwaway PostgreSQL server for tests: initdb in a temp dir, `postgres` listening only
// on a private unix-socket directory (no TCP) with a chosen port number, fsync off. The
// binaries are Debian's (/usr/lib/postgresql/N/bin, installed by
// scripts/install-test-deps.sh). PostgreSQL refuses to run as root, so when the test runs
// as root the server runs as the `postgres` user (or `nobody`). close() stops it (fast
// shutdown, then SIGKILL) and removes the directory; a crashing test process kills it on
// the way out.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './ports.js';
import { removeScratchDir, scratchDir, serverUser, stopChild, trackChild } from './scratch-server.js';

/** The directory of the newest installed PostgreSQL's binaries, or a reason why there is none. */
export function findPostgresBin(): { dir: string } | { missing: string } {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return { dir: join(root, versions[0], 'bin') };
  }
  const cfg = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const dir = cfg.status === 0 ? cfg.stdout.trim() : '';
  if (dir && existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) return { dir };
  return { missing: 'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres; scripts/install-test-deps.sh installs Debian\'s postgresql as root)' };
}

export interface PgServer {
  /** connection settings for pg.Client / pg.Pool */
  config: pg.ClientConfig;
  /** the same as a libpq connection string (for a child process: `--database …`) */
  url: string;
  dir: string;
  close(): Promise<void>;
}

/** Starts a private PostgreSQL server; rejects (after cleaning up) if it cannot. */
export async function startPostgres(o: { bin: string; log?: (line: string) => void }): Promise<PgServer> {
  const dir = scratchDir('raftlock-pg-');
  const data = join(dir, 'data');
  const sock = join(dir, 'sock');
  mkdirSync(sock);
  const user = serverUser(['postgres', 'nobody'], 'PostgreSQL');
  if (user) for (const p of [dir, sock]) chownSync(p, user.uid, user.gid);
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  const asUser = user ? { uid: user.uid, gid: user.gid } : {};
  let proc: ChildProcess | undefined;
  const cleanup = async (): Promise<void> => {
    await stopChild(proc, 'SIGINT'); // fast shutdown: roll back open transactions, exit
    removeScratchDir(dir);
  };
  try {
    const init = spawnSync(join(o.bin, 'initdb'), ['-D', data, '-U', 'raftlock', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], { encoding: 'utf8', env, cwd: dir, ...asUser });
    if (init.status !== 0) throw new Error(`initdb failed (${init.status ?? init.signal}): ${(init.stderr || init.stdout).trim().slice(-800)}`);
    const port = await freePort();
    // listen_addresses='' : unix socket only, in our own directory; the port names the socket file
    const args = ['-D', data, '-k', sock, '-p', String(port), '-c', "listen_addresses=", '-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'synchronous_commit=off', '-c', 'max_connections=40'];
    const p = spawn(join(o.bin, 'postgres'), args, { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], ...asUser });
    proc = p;
    trackChild(p);
    let output = '';
    const collect = (b: Buffer): void => {
      output = (output + b.toString()).slice(-4000);
      o.log?.(b.toString());
    };
    p.stdout?.on('data', collect);
    p.stderr?.on('data', collect);
    const config: pg.ClientConfig = { host: sock, port, user: 'raftlock', database: 'postgres' };
    await waitReady(config, p, () => output);
    return { config, url: `postgresql://raftlock@/postgres?host=${encodeURIComponent(sock)}&port=${port}`, dir, close: cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

async function waitReady(config: pg.ClientConfig, p: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (p.exitCode !== null || p.signalCode !== null) throw new Error(`postgres exited (${p.exitCode ?? p.signalCode}) while starting: ${output().trim().slice(-800)}`);
    const c = new pg.Client(config);
    try {
      await c.connect();
      await c.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections within 30 s: ${String(err)}; ${output().trim().slice(-800)}`);
    } finally {
      await c.end().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
