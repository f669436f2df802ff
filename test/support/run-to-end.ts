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
  /** holds the child while it runs, for the suite's cleanup to kill (with killGroup) */
  running: Set<ChildProcess>;
  /** how a failure names the command (default: the command line) */
  what?: string;
  onSpawn?: (p: ChildProcess) => void;
}

/**
 * Kill a child that runToEnd started and everything it started: it leads its own process
 * group. Killing only the child left what it ran (`raftlock lock -- CMD`'s command, a
 * `go test` binary) holding our end of its output pipes, and the test file never exited.
 */
export function killGroup(p: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (p.pid === undefined) return;
  try {
    process.kill(-p.pid, signal);
  } catch {
    p.kill(signal); // the group is gone already (or was never made): the child alone
  }
}

export function runToEnd(cmd: string, args: string[], o: RunOptions): Promise<Run> {
  return new Promise((resolve, reject) => {
    // detached: the child leads a process group of its own, so killGroup reaches what it runs
    const p = spawn(cmd, args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    o.running.add(p);
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      killGroup(p);
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
