// `raftlock lock` and `raftlock semaphore` never leave behind a grant their user did not
// see (docs/client.md "An acquire that fails never leaves a grant behind"), against a stub
// server that answers 504 after granting or grants after the command was interrupted (the
// SDK's side: test/client/acquire-cleanup.test.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { binPath } from '../support/cluster-harness.js';
import { StubLockServer } from '../support/stub-lock-server.js';
import { until } from '../support/until.js';

describe('raftlock lock leaves no grant behind when its acquire fails', () => {
  let stub: StubLockServer;
  before(async () => {
    stub = await StubLockServer.start();
  });
  after(async () => {
    await stub.close();
  });

  function lockCmd(name: string, extra: string[], cmd: 'lock' | 'semaphore' = 'lock'): { proc: ChildProcess; done: Promise<number | null> } {
    const proc = spawn(process.execPath, [binPath, cmd, name, '--endpoints', stub.url, '--wait', '10s', ...extra, '--', process.execPath, '-e', 'process.exit(0)'], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, RAFTLOCK_ENDPOINTS: '' } });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    const done = new Promise<number | null>((resolve) => proc.once('exit', (code) => (clearTimeout(timer), resolve(code))));
    return { proc, done };
  }

  it('outcome unknown (504s): exits 3, and its session is closed, so the grant is gone', async () => {
    stub.acquireMode = { kind: 'apply-then-504' };
    const { done } = lockCmd('C1', ['--retry-for', '300ms']);
    assert.equal(await done, 3);
    assert.ok(stub.log.some((l) => l.method === 'DELETE'), 'the session was closed');
    assert.equal(stub.holders.get('C1'), undefined);
  });

  it('Ctrl-C while a grant is on its way: exits 130, its session is closed, the late grant never happens', async () => {
    stub.acquireMode = { kind: 'grant-later', delayMs: 1500 };
    stub.log.length = 0;
    const { proc, done } = lockCmd('C2', []);
    await until(() => stub.log.some((l) => l.url === '/v1/locks/C2/acquire'), 10_000, 'the acquire reached the server');
    proc.kill('SIGINT');
    assert.equal(await done, 130);
    assert.ok(stub.log.some((l) => l.method === 'DELETE'), 'the session was closed');
    await new Promise((r) => setTimeout(r, 1600)); // past the stub's grant time: it must not grant
    assert.equal(stub.holders.get('C2'), undefined);
  });

  it('raftlock semaphore: Ctrl-C while a grant is on its way → exits 130, its session is closed, the late grant never stays', async () => {
    stub.semMode = { kind: 'grant-later', delayMs: 1500 };
    stub.log.length = 0;
    const { proc, done } = lockCmd('C3', ['--limit', '2'], 'semaphore');
    await until(() => stub.log.some((l) => l.url === '/v1/semaphores/C3/acquire'), 10_000, 'the acquire reached the server');
    proc.kill('SIGINT');
    assert.equal(await done, 130);
    assert.ok(stub.log.some((l) => l.method === 'DELETE'), 'the session was closed');
    await new Promise((r) => setTimeout(r, 1600)); // past the stub's grant time: it must not grant
    assert.equal(stub.inUse('C3'), 0);
  });
});
