// A command run to its end with its output collected, for the tests of the CLI and of the
// Go and Python clients: a hung one is killed after its timeout and fails the test.
import { spawn, type ChildProcess } from 'node:child_process';

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs: number;
  /** holds the child while it runs, for the suite's cleanup to kill */
  running: Set<ChildProcess>;
  /** how a failure names the command (default: the command line) */
  what?: string;
  onSpawn?: (p: ChildProcess) => void;
}

export function runToEnd(cmd: string, args: string[], o: RunOptions): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'] });
    o.running.add(p);
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`${o.what ?? `${cmd} ${args.join(' ')}`} did not finish in ${o.timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, o.timeoutMs);
    p.once('error', (err) => {
      clearTimeout(timer);
      o.running.delete(p);
      reject(err);
    });
    p.once('exit', (code, signal) => {
      clearTimeout(timer);
      o.running.delete(p);
      resolve({ code, signal, stdout, stderr });
    });
    o.onSpawn?.(p);
  });
}
