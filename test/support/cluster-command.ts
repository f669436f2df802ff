// `raftlock cluster --config FILE` (what `npm start` runs) as a child process for tests: in
// its own process group, so that a stop after a failure reaches the nodes it spawned too;
// and any other `raftlock` command run to completion (runCli).
import { spawn } from 'node:child_process';
import { binPath } from './cluster-harness.js';

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run `raftlock ARGS` to completion (killed after `timeoutMs`). */
export function runCli(args: string[], timeoutMs = 20_000): Promise<CliRun> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [binPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('exit', (code, signal) => {
      clearTimeout(timer);
      // let the pipes drain
      setImmediate(() => resolve({ code, signal, stdout, stderr }));
    });
  });
}

export interface ClusterCommand {
  /** stdout and stderr so far */
  output(): string;
  /** SIGINT (Ctrl-C), then the exit code; the whole group is SIGKILLed if it has not exited
   *  within `killAfterMs` (the code is then null). Idempotent. */
  stop(): Promise<number | null>;
  /** one signal (SIGINT unless named) to the command's own process, not its nodes, as a
   *  supervisor sends it */
  signal(sig?: NodeJS.Signals): void;
  /** the exit code, once it has exited */
  exited: Promise<number | null>;
}

export function startClusterCommand(configPath: string, o: { env?: NodeJS.ProcessEnv; killAfterMs?: number } = {}): ClusterCommand {
  const proc = spawn(process.execPath, [binPath, 'cluster', '--config', configPath, '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: o.env ?? process.env });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  let code: number | null | undefined;
  const exited = new Promise<number | null>((r) => proc.once('exit', (c) => r((code = c))));
  return {
    output: () => out,
    signal: (sig = 'SIGINT') => {
      if (code === undefined) process.kill(proc.pid!, sig);
    },
    exited,
    stop: async () => {
      if (code !== undefined) return code;
      process.kill(proc.pid!, 'SIGINT');
      const hung = setTimeout(() => {
        try {
          process.kill(-proc.pid!, 'SIGKILL'); // the whole group: the nodes too
        } catch {
          /* gone */
        }
      }, o.killAfterMs ?? 20_000);
      try {
        return await exited;
      } finally {
        clearTimeout(hung);
      }
    },
  };
}
