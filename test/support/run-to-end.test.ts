// runToEnd's cleanup reaches what the child started (test/support/run-to-end.ts killGroup):
// a command that runs another, as `raftlock lock -- CMD` does, and is killed mid-run must
// not leave that one behind holding our end of its output pipes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { killGroup, runToEnd } from './run-to-end.js';
import { until } from './until.js';

/** a parent that starts a child which ignores SIGTERM and runs for ever, prints its pid, and waits */
const PARENT = `
const { spawn } = require('node:child_process');
const c = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: 'inherit' });
console.log(c.pid);
setInterval(() => {}, 1000);`;

/** running (a zombie that nobody has reaped yet counts as gone: it runs nothing and holds no pipe) */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/PID/stat: "pid (comm) S …"; the state follows the last ')'
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc here: kill(pid, 0) is all we can ask
  }
}

test('killGroup ends the child and what it started, and the run settles', async () => {
  const running = new Set<ChildProcess>();
  let child: ChildProcess | undefined;
  const run = runToEnd(process.execPath, ['-e', PARENT], { env: process.env, timeoutMs: 20_000, running, onSpawn: (p) => (child = p) });
  let grandchild = 0;
  child!.stdout!.on('data', (c: Buffer) => (grandchild ||= Number.parseInt(c.toString(), 10)));
  try {
    await until(() => grandchild > 0, 10_000, 'the grandchild pid');
    assert.ok(alive(grandchild));
    killGroup(child!);
    const r = await run;
    assert.equal(r.signal, 'SIGKILL');
    await until(() => !alive(grandchild), 5_000, `grandchild ${grandchild} gone`);
  } finally {
    if (grandchild > 0 && alive(grandchild)) process.kill(grandchild, 'SIGKILL');
    for (const p of running) killGroup(p);
  }
});
