// A throwaway Redis server for tests: `redis-server` listening only on a unix socket in a
// temp dir (`--port 0`: no TCP port), no persistence, noeviction. The binary is Debian's
// (redis-server, installed by scripts/install-test-deps.sh); /etc/redis is never read
// (every setting is on the command line). close() stops it (SIGTERM, then SIGKILL) and
// removes the directory; a crashing test process kills it on the way out.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { removeScratchDir, scratchDir, stopChild, trackChild } from './scratch-server.js';

/** the redis-server binary on PATH, or a reason why there is none */
export function findRedis(): { server: string } | { missing: string } {
  const r = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const server = r.status === 0 ? r.stdout.trim() : '';
  if (server) return { server };
  return { missing: "Redis is not installed (no redis-server on PATH; scripts/install-test-deps.sh installs Debian's redis-server as root)" };
}

export interface RedisServer {
  /** the unix socket: `new Redis(socket)` in ioredis */
  socket: string;
  dir: string;
  /** a connected ioredis client; closed by close() */
  connect(): Redis;
  close(): Promise<void>;
}

/** Starts a private Redis server; rejects (after cleaning up) if it cannot. */
export async function startRedis(o: { server: string }): Promise<RedisServer> {
  const dir = scratchDir('raftlock-redis-');
  const socket = join(dir, 'redis.sock');
  const clients: Redis[] = [];
  let proc: ChildProcess | undefined;
  const cleanup = async (): Promise<void> => {
    await Promise.allSettled(clients.map((c) => c.quit().catch(() => c.disconnect())));
    await stopChild(proc, 'SIGTERM');
    removeScratchDir(dir);
  };
  try {
    const args = ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--dir', dir, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction', '--daemonize', 'no', '--loglevel', 'warning'];
    const p = spawn(o.server, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    proc = p;
    trackChild(p);
    let output = '';
    const collect = (b: Buffer): void => void (output = (output + b.toString()).slice(-4000));
    p.stdout?.on('data', collect);
    p.stderr?.on('data', collect);
    const connect = (): Redis => {
      const c = new Redis({ path: socket, maxRetriesPerRequest: 1, lazyConnect: false });
      clients.push(c);
      return c;
    };
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (p.exitCode !== null || p.signalCode !== null) throw new Error(`redis-server exited (${p.exitCode ?? p.signalCode}) while starting: ${output.trim().slice(-800)}`);
      const probe = new Redis({ path: socket, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined); // a refused connection while the server starts
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') break;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`redis-server did not answer within 20 s: ${String(err)}; ${output.trim().slice(-800)}`);
      } finally {
        probe.disconnect();
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { socket, dir, connect, close: cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
