// What the throwaway servers of the tests (postgres.ts, mysql.ts, redis.ts) and the cluster
// harness share: the children and scratch directories a test process made are killed and
// removed if it exits without closing them (a crash, an uncaught error), so a failed run
// never leaves a server holding a port or a socket and burning CPU; a server is stopped
// with its own shutdown signal, then SIGKILL; and a server that refuses to run as root
// runs as an unprivileged system user.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const live = new Set<ChildProcess>();
const dirs = new Set<string>();
process.once('exit', () => {
  for (const p of live) {
    try {
      p.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** kill `p` if this process exits before untrackChild(p) */
export function trackChild(p: ChildProcess): void {
  live.add(p);
}

export function untrackChild(p: ChildProcess): void {
  live.delete(p);
}

/** a new scratch directory under the system's temp dir, removed on exit unless removeScratchDir ran */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

export function removeScratchDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

/** stop a server child: `signal` (its own clean shutdown), SIGKILL after 5 s; then untracked */
export async function stopChild(p: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (p === undefined) return;
  if (p.exitCode === null && p.signalCode === null) {
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill(signal);
    const timer = setTimeout(() => p.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
  untrackChild(p);
}

/** uid/gid to run a server as: ourselves, or the first of `users` that exists when we are root */
export function serverUser(users: readonly string[], server: string): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n').map((l) => l.split(':'));
  for (const name of users) {
    const e = passwd.find((f) => f[0] === name);
    if (e && Number(e[2]) > 0) return { uid: Number(e[2]), gid: Number(e[3]) };
  }
  throw new Error(`running as root and neither ${users.map((u) => `a ${u}`).join(' nor ')} user exists to run ${server} as`);
}
