// Child processes for the benchmark's own clusters (raftlock and etcd): free loopback
// ports, spawn with the output into a log file, poll an HTTP URL until it answers, and a
// teardown that always runs (SIGTERM, then SIGKILL after a grace period, then the temp
// dir). Every child also dies with this process (the 'exit' hook), so a crashed or
// interrupted benchmark never leaves nodes holding ports or burning the shared CPU.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, rmSync } from 'node:fs';

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) {
    try {
      p.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    // the 'exit' hook above kills the children
    process.exit(130);
  });
}

// Ports the benchmark's clusters listen on: random, below the kernel's ephemeral range and
// never handed out twice (the tests' picker; a port found by binding port 0 could be taken
// by an outgoing connection before the node binds it)
export { freePort } from '../../test/support/ports.js';

export interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly logPath: string;
  exited: boolean;
  /** set by stopChild: an exit after this is expected */
  stopping: boolean;
}

export function startChild(name: string, cmd: string, args: string[], logPath: string, env?: NodeJS.ProcessEnv): Child {
  const log = createWriteStream(logPath, { flags: 'a' });
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env });
  proc.stdout!.pipe(log, { end: false });
  proc.stderr!.pipe(log, { end: false });
  const child: Child = { name, proc, logPath, exited: false, stopping: false };
  live.add(proc);
  proc.once('exit', (code, signal) => {
    child.exited = true;
    // a node that dies under load is a finding, not noise: say so with how it ended and
    // the end of its log (the log may be removed with its temp dir at teardown)
    if (!child.stopping) {
      log.once('finish', () => {
        let tail = '';
        try {
          tail = readFileSync(logPath, 'utf8').slice(-1500);
        } catch {
          /* gone */
        }
        process.stderr.write(`\nwarning: ${name} exited unexpectedly (${signal ?? `code ${code}`}); end of ${logPath}:\n${tail}\n`);
      });
    }
    live.delete(proc);
    log.end();
  });
  proc.once('error', () => {
    child.exited = true;
    live.delete(proc);
  });
  return child;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopChild(c: Child, graceMs = 10_000): Promise<void> {
  c.stopping = true;
  if (c.exited) return;
  await new Promise<void>((resolve) => {
    c.proc.once('exit', () => resolve());
    const t = setTimeout(() => c.proc.kill('SIGKILL'), graceMs);
    t.unref();
    c.proc.kill('SIGTERM');
  });
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Poll until `check` returns a value (not undefined) or the deadline passes. */
export async function pollUntil<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>, children: Child[] = []): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = children.find((c) => c.exited);
    if (dead) throw new Error(`${dead.name} exited while waiting for ${what}; see ${dead.logPath}`);
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** GET a URL with a short timeout; the parsed JSON body, or undefined on any failure. */
export async function getJson<T>(url: string, init?: RequestInit): Promise<{ status: number; body: T } | undefined> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(2000) });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  } catch {
    return undefined;
  }
}
