// A client command whose stdout reader is gone (`raftlock --help | head -1`) ends quietly
// with its own exit code: no EPIPE stack trace on stderr (src/cli/main.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { binPath } from '../support/cluster-harness.js';

test('raftlock --help with its stdout closed by the reader: exit 0, nothing on stderr', async () => {
  const proc = spawn(process.execPath, [binPath, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
  // the reader goes away before the help is written
  proc.stdout.destroy();
  let stderr = '';
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => proc.on('close', (c) => resolve(c)));
  assert.equal(stderr, '', 'no stack trace');
  assert.equal(code, 0);
});
