// The access-logged resource (resource-proc.ts /begin, /end) as a real process: shared
// readers coexist, a write with a higher token makes the readers' ends stale, lower tokens
// are refused, semaphore holders are only counted, and bad input gets a 400; the bank's
// transfers (the transfer workload) are fenced per account and refused whole.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { siblingArgv } from './procs.js';
import type { ResourceArgs } from './resource-proc.js';
import type { AccessLogEntry, BankLogEntry } from '../checkers/history/resource-logs.js';
import { checkTransfers } from '../checkers/history/transfer.js';
import { checkSharedLocks } from '../checkers/history/shared.js';

test('access-logged resource: fencing of shared-lock accesses at begin and end, semaphore counts, bad input', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'raftlock-resource-'));
  const args: ResourceArgs = { logFile: join(dir, 'resource.jsonl'), accessLogFile: join(dir, 'access.jsonl'), bankLogFile: join(dir, 'bank.jsonl'), openingBalance: 100, fencing: true, t0: process.hrtime.bigint().toString(), host: '127.0.0.1' };
  const [cmd, ...argv] = siblingArgv('resource-proc');
  const child = spawn(cmd!, [...argv, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('the resource did not start within 20 s')), 20_000);
      createInterface({ input: child.stdout! }).once('line', (l) => {
        clearTimeout(t);
        resolve((JSON.parse(l) as { port: number }).port);
      });
      child.once('exit', (code) => reject(new Error(`the resource exited (${code})`)));
    });
    const call = async (path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const L = 'js-0';
    assert.equal((await call('/begin', { name: L, token: 5, mode: 'read' })).status, 200);
    const second = await call('/begin', { name: L, token: 6, mode: 'read' });
    assert.equal(second.status, 200, 'readers coexist');
    assert.equal(second.body.active, 2);
    assert.equal((await call('/begin', { name: L, token: 7, mode: 'write' })).status, 200, 'a write with the highest token is let in (its holder is the lock\'s)');
    assert.equal((await call('/end', { name: L, token: 5, mode: 'read' })).status, 409, 'a read a newer write overlapped is stale at its end');
    assert.equal((await call('/end', { name: L, token: 6, mode: 'read' })).status, 409);
    assert.equal((await call('/end', { name: L, token: 7, mode: 'write' })).status, 200);
    const low = await call('/begin', { name: L, token: 6, mode: 'write' });
    assert.equal(low.status, 409);
    assert.equal((low.body.error as { code: string }).code, 'stale_token');
    assert.equal((await call('/begin', { name: L, token: 6, mode: 'read' })).status, 409, 'a read below a write already begun');
    assert.equal((await call('/begin', { name: L, token: 8, mode: 'read' })).status, 200);
    assert.equal((await call('/end', { name: L, token: 8, mode: 'read' })).status, 200);
    // semaphores: counted, never fenced (holders run side by side)
    assert.equal((await call('/begin', { name: 'jm-0', token: 9, permits: 2 })).status, 200);
    const sem = await call('/begin', { name: 'jm-0', token: 3, permits: 1 });
    assert.equal(sem.status, 200);
    assert.equal(sem.body.active, 3);
    assert.equal((await call('/end', { name: 'jm-0', token: 9, permits: 2 })).status, 200);
    for (const bad of [{}, { name: L, token: 1.5, mode: 'read' }, { name: L, token: 1 }, { name: 'jm-0', token: 1, permits: 0 }, { name: L, token: 1, mode: 'append' }]) {
      const r = await call('/begin', bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.equal((r.body.error as { code: string }).code, 'invalid_request');
    }
    const log = readFileSync(args.accessLogFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as AccessLogEntry);
    assert.equal(log.length, 13, 'every begin and end is logged, refused ones too; bad input is not');
    const r = checkSharedLocks([], log, 2000, true);
    assert.deepEqual(r.violations, [], 'what the resource accepted passes its checker');
    assert.equal(r.rejected, 4);
    assert.equal(r.overlapsAccepted, 0);
    assert.equal(log.at(-1)!.active, 1);
    // the bank: fenced reads, a transfer in one transaction, refused whole when one token is stale
    const rd = await call('/bank/read', { tokens: { 'ja-0': 10, 'ja-1': 11 } });
    assert.deepEqual(rd.body.balances, { 'ja-0': 100, 'ja-1': 100 });
    assert.equal((await call('/bank/transfer', { id: 't1', from: 'ja-0', to: 'ja-1', amount: 7, tokens: { 'ja-0': 10, 'ja-1': 11 }, read: { 'ja-0': 100, 'ja-1': 100 } })).status, 200);
    const stale = await call('/bank/transfer', { id: 't2', from: 'ja-1', to: 'ja-2', amount: 5, tokens: { 'ja-1': 9, 'ja-2': 12 }, read: { 'ja-1': 107, 'ja-2': 100 } });
    assert.equal(stale.status, 409, 'a token below what ja-1 saw: nothing moves, ja-2 either');
    assert.equal((await call('/bank/read', { tokens: { 'ja-0': 5 } })).status, 409);
    assert.deepEqual((await call('/bank/read', { tokens: { 'ja-1': 11, 'ja-2': 12 } })).body.balances, { 'ja-1': 107, 'ja-2': 100 });
    assert.equal((await call('/bank/transfer', { id: 't3', from: 'ja-0', to: 'ja-0', amount: 1, tokens: { 'ja-0': 10 }, read: { 'ja-0': 93 } })).status, 400);
    const bank = readFileSync(args.bankLogFile!, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as BankLogEntry);
    assert.deepEqual(bank.map((e) => [e.id, e.accepted]), [['t1', true], ['t2', false]]);
    const t = checkTransfers([], bank, ['ja-0', 'ja-1', 'ja-2'], 100, true);
    assert.equal(t.total, 300);
    assert.deepEqual(t.violations.filter((v) => !/which no client sent/.test(v)), []);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
