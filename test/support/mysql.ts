// A throwaway MariaDB server for tests: mariadb-install-db into a temp dir, `mariadbd`
// listening only on a unix socket in that dir (--skip-networking: no TCP port), small
// buffers, no binary log, lazy flushing. The binaries are Debian's (mariadb-server,
// installed by scripts/install-test-deps.sh); /etc/mysql is never read (--no-defaults).
// MariaDB will not run as root, so when the test runs as root the server runs as the
// `mysql` user (or `nobody`). root@localhost has no password, over the socket. close()
// stops it (SIGTERM, then SIGKILL) and removes the directory; a crashing test process
// kills it on the way out.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { removeScratchDir, scratchDir, serverUser, stopChild, trackChild } from './scratch-server.js';

const SERVER = '/usr/sbin/mariadbd';
const INSTALL_DB = '/usr/bin/mariadb-install-db';
const CLIENT = '/usr/bin/mariadb';

/** Debian's MariaDB binaries, or a reason why they are not there. */
export function findMariadb(): { server: string; installDb: string; client: string } | { missing: string } {
  for (const f of [SERVER, INSTALL_DB, CLIENT]) {
    if (!existsSync(f)) return { missing: `MariaDB is not installed (no ${f}; scripts/install-test-deps.sh installs Debian's mariadb-server as root)` };
  }
  return { server: SERVER, installDb: INSTALL_DB, client: CLIENT };
}

export interface MysqlServer {
  /** connection options for mysql2 (root over the socket, the test database) */
  config: mysql.ConnectionOptions;
  /** the same as a URL for mysql2 (`mysql://root@localhost/db?socketPath=…`) */
  url: string;
  socket: string;
  database: string;
  dir: string;
  /** runs the `mariadb` command-line client on the test database with `sql` as its input (as users load a .sql file) */
  client(sql: string): { status: number | null; stdout: string; stderr: string };
  close(): Promise<void>;
}

/** Starts a private MariaDB server with an empty database `database`; rejects (after cleaning up) if it cannot. */
export async function startMariadb(o: { server: string; installDb: string; client: string; database?: string }): Promise<MysqlServer> {
  const dir = scratchDir('raftlock-mysql-');
  const data = join(dir, 'data');
  const socket = join(dir, 'mysqld.sock');
  const database = o.database ?? 'raftlock_test';
  const user = serverUser(['mysql', 'nobody'], 'MariaDB');
  if (user) chownSync(dir, user.uid, user.gid);
  const asUser = user ? { uid: user.uid, gid: user.gid } : {};
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  // the same sizes for the bootstrap and the server (InnoDB's redo log is created once)
  const innodb = ['--innodb-log-file-size=8M', '--innodb-buffer-pool-size=32M'];
  let proc: ChildProcess | undefined;
  const cleanup = async (): Promise<void> => {
    await stopChild(proc, 'SIGTERM'); // a normal shutdown: open transactions roll back
    removeScratchDir(dir);
  };
  try {
    const init = spawnSync(o.installDb, ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...innodb], { encoding: 'utf8', env, cwd: dir, ...asUser });
    if (init.status !== 0) throw new Error(`mariadb-install-db failed (${init.status ?? init.signal}): ${(init.stderr || init.stdout).trim().slice(-800)}`);
    const args = [
      '--no-defaults', `--datadir=${data}`, `--socket=${socket}`, '--skip-networking', `--pid-file=${join(dir, 'mysqld.pid')}`,
      `--log-error=${join(dir, 'error.log')}`, ...innodb, '--innodb-flush-log-at-trx-commit=0', '--innodb-doublewrite=0',
      '--skip-log-bin', '--performance-schema=OFF', '--innodb-lock-wait-timeout=20', '--max-connections=60',
    ];
    const p = spawn(o.server, args, { env, cwd: dir, stdio: ['ignore', 'ignore', 'ignore'], ...asUser });
    proc = p;
    trackChild(p);
    const errorLog = (): string => {
      try {
        return readFileSync(join(dir, 'error.log'), 'utf8').trim().slice(-800);
      } catch {
        return '(no error log)';
      }
    };
    await waitReady(socket, p, errorLog);
    const root = await mysql.createConnection({ socketPath: socket, user: 'root' });
    try {
      await root.query(`CREATE DATABASE \`${database}\``);
    } finally {
      await root.end();
    }
    const config: mysql.ConnectionOptions = { socketPath: socket, user: 'root', database };
    const client = (sql: string): { status: number | null; stdout: string; stderr: string } => {
      const r = spawnSync(o.client, ['--no-defaults', `--socket=${socket}`, '--user=root', `--database=${database}`], { input: sql, encoding: 'utf8', env });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    return { config, url: `mysql://root@localhost/${database}?socketPath=${encodeURIComponent(socket)}`, socket, database, dir, client, close: cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

async function waitReady(socket: string, p: ChildProcess, errorLog: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (p.exitCode !== null || p.signalCode !== null) throw new Error(`mariadbd exited (${p.exitCode ?? p.signalCode}) while starting: ${errorLog()}`);
    if (existsSync(socket)) {
      try {
        const c = await mysql.createConnection({ socketPath: socket, user: 'root', connectTimeout: 2000 });
        await c.end();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`mariadbd did not accept connections within 30 s: ${String(err)}; ${errorLog()}`);
      }
    } else if (Date.now() > deadline) {
      throw new Error(`mariadbd did not create its socket within 30 s: ${errorLog()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
