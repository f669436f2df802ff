// Redis fencing (deploy/redis/raftlock-fence.lua, raftlock-fenced-set.lua, the SDK's
// FENCE_LUA / FENCED_SET_LUA and mapFencingError) against a private Redis started for this
// file (test/support/redis.ts: a unix socket in its own temp dir, no TCP port): the SDK's
// texts are the files' code, both scripts' rules, the files run as they are (redis-cli
// --eval, SCRIPT LOAD twice), a stale fenced set leaves the data unchanged, the error
// mapping, a jepsen-lite style run of paused lock holders against a real cluster
// (test/support/fence-run.ts; seeded: RAFTLOCK_FENCE_SEED=N replays), and
// examples/fenced-inventory-redis.ts. Skipped with one line when Redis is not installed.
import { describe, it, before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { repoRoot } from '../support/cluster-harness.js';
import { suiteCluster } from '../support/suite-cluster.js';
import { findRedis, startRedis, type RedisServer } from '../support/redis.js';
import { redisCounterKeys, type RedisCounterValue } from '../support/fence-stores.js';
import { assertFencedRun, checkFencedRun, runFencedWorkers, type WriteEvent } from '../support/fence-run.js';
import { testSeed } from '../support/seed.js';
import { FENCE_LUA, FENCED_SET_LUA, mapFencingError, StaleFencingTokenError } from '../../src/index.js';

const bin = findRedis();
const skip = 'missing' in bin ? `skipped: ${bin.missing}` : false;
const fencePath = join(repoRoot, 'deploy', 'redis', 'raftlock-fence.lua');
const fencedSetPath = join(repoRoot, 'deploy', 'redis', 'raftlock-fenced-set.lua');

/** the error message a command fails with (undefined when it succeeds) */
async function failure(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

test("checkFencedRun, the runs' checker, finds a stale write, a lost update and a late write that was not refused", () => {
  const ok = (name: string, token: number, read: number, tStart = 0): WriteEvent => ({ ev: 'write', name, token, tStart, t: tStart, signalAborted: false, result: 'ok', read, wrote: read + 1 });
  const good = [ok('w1', 5, 0), ok('w2', 7, 1), ok('w1', 7, 2)];
  const accepted = (ws: WriteEvent[]): { token: number; writer: string; read: number; wrote: number }[] =>
    ws.map((w) => ({ token: w.token, writer: w.name, read: (w as { read: number }).read, wrote: (w as { wrote: number }).wrote }));
  assert.deepEqual(checkFencedRun({ writes: good, pauses: [] }, accepted(good), { counter: 3, fence: 7 }).violations, []);
  const stale = [ok('w1', 5, 0), ok('w2', 7, 1), ok('w1', 5, 2)];
  assert.match(checkFencedRun({ writes: stale, pauses: [] }, accepted(stale), { counter: 3, fence: 7 }).violations.join('\n'), /stale write landed: #3 by w1 with token 5 after token 7/);
  const lost = [ok('w1', 5, 0), ok('w2', 7, 0)];
  assert.match(checkFencedRun({ writes: lost, pauses: [] }, accepted(lost), { counter: 1, fence: 7 }).violations.join('\n'), /lost update: #2 by w2/);
  const late = [ok('w2', 7, 0), ok('w1', 5, 1, 2000)];
  const pause = { worker: 'w1', token: 5, pausedAt: 500, resumedAt: 1500, fenceAtResume: 7 };
  assert.match(checkFencedRun({ writes: late, pauses: [pause] }, accepted(late), { counter: 2, fence: 7 }).violations.join('\n'), /w1's late write with token 5 \(fence 7\) was ok, not refused/);
});

describe('Redis fencing (raftlock-fence.lua, raftlock-fenced-set.lua)', { skip }, () => {
  let server: RedisServer;
  let r: Redis;
  const fence = (key: string, token: string | number): Promise<unknown> => r.eval(FENCE_LUA, 1, key, String(token));
  const fencedSet = (key: string, data: string, token: string | number, value: string): Promise<unknown> => r.eval(FENCED_SET_LUA, 2, key, data, String(token), value);

  before(async () => {
    if ('missing' in bin) return;
    server = await startRedis(bin);
    r = server.connect();
  });
  after(async () => {
    await server?.close();
  });

  it("the SDK's FENCE_LUA and FENCED_SET_LUA are the deploy files' code, to the byte, after a header of comments", () => {
    for (const [path, code] of [[fencePath, FENCE_LUA], [fencedSetPath, FENCED_SET_LUA]] as const) {
      const text = readFileSync(path, 'utf8');
      assert.ok(text.endsWith(code), `${path} ends with the SDK's text`);
      const header = text.slice(0, text.length - code.length).split('\n');
      assert.ok(header.every((l) => l === '' || l.startsWith('--')), `${path}: only comments before the code`);
      assert.match(header.join('\n'), /atomic/);
      assert.match(header.join('\n'), /asynchronous/);
    }
  });

  it('fence: 5 ok, 5 ok, 4 → RLF01 (nothing written), 6 ok; exact beyond 2^53; bad input refused with ERR', async () => {
    assert.equal(await fence('f:rules', 5), 1);
    assert.equal(await fence('f:rules', 5), 1); // the same holder writes twice
    assert.equal(await r.get('f:rules'), '5');
    assert.equal(await failure(fence('f:rules', 4)), 'RLF01 stale fencing token 4 (highest 5) for f:rules');
    assert.equal(await r.get('f:rules'), '5');
    assert.equal(await fence('f:rules', 6), 1);
    assert.equal(await r.get('f:rules'), '6');
    // Lua's numbers are doubles: 2^53 + 1 and 2^53 are one double, but not one token
    assert.equal(await fence('f:big', '9007199254740993'), 1);
    assert.match((await failure(fence('f:big', '9007199254740992'))) ?? '', /^RLF01 stale fencing token 9007199254740992 \(highest 9007199254740993\)/);
    assert.equal(await fence('f:big', '9223372036854775807'), 1);
    assert.equal(await fence('f:other', 1), 1); // keys are independent
    for (const bad of ['-1', '4.5', '05', '', 'abc', '9223372036854775808', '1e3']) {
      assert.match((await failure(fence('f:rules', bad))) ?? '', /^ERR raftlock fence: token must be an integer/, `token ${JSON.stringify(bad)}`);
    }
    assert.equal(await r.get('f:rules'), '6');
    await r.set('f:junk', 'not a token');
    assert.match((await failure(fence('f:junk', 1))) ?? '', /^ERR raftlock fence: f:junk does not hold a fencing token/);
    assert.equal(await r.get('f:junk'), 'not a token');
    await r.lpush('f:list', 'x');
    assert.match((await failure(fence('f:list', 1))) ?? '', /WRONGTYPE/);
    assert.match((await failure(r.eval(FENCE_LUA, 2, 'a', 'b', '1'))) ?? '', /^ERR raftlock fence: usage/);
    assert.match((await failure(r.eval(FENCE_LUA, 1, 'a'))) ?? '', /^ERR raftlock fence: usage/);
  });

  it('fenced set: writes with a fresh or equal token; a stale one leaves the data key and the fence unchanged', async () => {
    assert.equal(await fencedSet('fs:fence', 'fs:data', 5, 'by 5'), 1);
    assert.equal(await r.get('fs:fence'), '5', 'the fenced set records its token');
    assert.equal(await fencedSet('fs:fence', 'fs:data', 5, 'by 5 again'), 1);
    assert.equal(await r.get('fs:data'), 'by 5 again');
    assert.equal(await failure(fencedSet('fs:fence', 'fs:data', 4, 'by 4')), 'RLF01 stale fencing token 4 (highest 5) for fs:fence');
    assert.equal(await r.get('fs:data'), 'by 5 again', 'the stale set wrote nothing');
    assert.equal(await r.get('fs:fence'), '5');
    assert.equal(await fencedSet('fs:fence', 'fs:data', 6, 'by 6'), 1);
    assert.equal(await r.get('fs:data'), 'by 6');
    // a fence raised by raftlock-fence.lua refuses the older holder's set
    assert.equal(await fence('fs:fence', 7), 1);
    assert.match((await failure(fencedSet('fs:fence', 'fs:data', 6, 'late'))) ?? '', /^RLF01 /);
    assert.equal(await r.get('fs:data'), 'by 6');
    // any value, binary too; the key's old type and TTL are replaced, as SET does
    await r.set('fs:ttl', 'x', 'EX', 100);
    assert.equal(await r.eval(FENCED_SET_LUA, 2, 'fs:fence', 'fs:ttl', '7', Buffer.from([0, 255, 10])), 1);
    assert.deepEqual(await r.getBuffer('fs:ttl'), Buffer.from([0, 255, 10]));
    assert.equal(await r.ttl('fs:ttl'), -1);
    assert.match((await failure(fencedSet('fs:fence', 'fs:data', 'x', 'v'))) ?? '', /^ERR raftlock fenced set: token must be an integer/);
    assert.match((await failure(r.eval(FENCED_SET_LUA, 1, 'fs:fence', '8', 'v'))) ?? '', /^ERR raftlock fenced set: usage/);
    assert.equal(await r.get('fs:data'), 'by 6');
  });

  it('the deploy files run as they are: redis-cli --eval, and SCRIPT LOAD twice gives one script', async () => {
    const cli = (file: string, ...rest: string[]): string => {
      const out = spawnSync('redis-cli', ['-s', server.socket, '--eval', file, ...rest], { encoding: 'utf8' });
      assert.equal(out.status, 0, out.stderr);
      return out.stdout.trim();
    };
    assert.equal(cli(fencePath, 'cli:fence', ',', '3'), '1');
    assert.equal(cli(fencePath, 'cli:fence', ',', '2'), 'RLF01 stale fencing token 2 (highest 3) for cli:fence');
    assert.equal(cli(fencedSetPath, 'cli:fence', 'cli:data', ',', '3', 'v3'), '1');
    assert.equal(cli(fencedSetPath, 'cli:fence', 'cli:data', ',', '2', 'v2'), 'RLF01 stale fencing token 2 (highest 3) for cli:fence');
    assert.equal(await r.get('cli:data'), 'v3');
    const text = readFileSync(fencedSetPath, 'utf8');
    const sha = (await r.script('LOAD', text)) as string;
    assert.equal(await r.script('LOAD', text), sha);
    assert.equal(await r.evalsha(sha, 2, 'cli:fence', 'cli:data', '4', 'v4'), 1);
    assert.match((await failure(r.evalsha(sha, 2, 'cli:fence', 'cli:data', '3', 'v3'))) ?? '', /^RLF01 /);
    assert.equal(await r.get('cli:data'), 'v4');
  });

  it("mapFencingError: ioredis' RLF01 reply becomes a StaleFencingTokenError; any other error passes through", async () => {
    await fence('map:fence', 12);
    const err = await fence('map:fence', 11).catch((e: unknown) => e);
    const mapped = mapFencingError(err, { resource: 'invoice/42', token: 11 });
    assert.ok(mapped instanceof StaleFencingTokenError, String(mapped));
    assert.deepEqual([mapped.code, mapped.resource, mapped.token, mapped.highestToken], ['stale_fencing_token', 'invoice/42', 11n, 12n]);
    assert.equal(mapped.cause, err);
    assert.match(mapped.message, /^Redis refused the write to "invoice\/42": fencing token 11 is stale/);
    const bare = mapFencingError(err) as StaleFencingTokenError;
    assert.deepEqual([bare.resource, bare.token, bare.highestToken], ['map:fence', 11n, 12n], 'without context: the fence key and the tokens from the reply');
    const other = await fence('map:fence', 'x').catch((e: unknown) => e);
    assert.equal(mapFencingError(other), other);
    // wrapped by a caller as `cause`: still found, and the wrapper stays the cause
    const wrapped = new Error('sale failed', { cause: err });
    assert.ok(mapFencingError(wrapped) instanceof StaleFencingTokenError);
    assert.equal(mapFencingError('RLF01 stale fencing token 1 (highest 2)'), 'RLF01 stale fencing token 1 (highest 2)', 'a string is no error object');
  });

  describe('against a real raftlock cluster', () => {
    const cluster = suiteCluster({ nodes: 3 });

    it('jepsen-lite style: workers paused past their TTL write through the fence, and no stale write lands', async (t) => {
      const seed = testSeed('RAFTLOCK_FENCE_SEED', { what: 'fenced Redis run', replay: 'node --test dist/test/redis/fencing.test.js', print: (l) => t.diagnostic(l) });
      const lock = 'stock/widgets';
      const keys = redisCounterKeys(lock);
      const started = Date.now();
      const run = await runFencedWorkers({
        endpoints: cluster().endpoints, store: 'redis', target: server.socket, lock, seed,
        fenceOf: async () => Number((await r.get(keys.fence)) ?? 0),
        log: (l) => t.diagnostic(l),
      });
      // Redis keeps no log: each accepted write's value is unique when no update was lost,
      // so the values order them (checkFencedRun then checks the chain 1, 2, 3, …)
      const accepted = run.writes
        .filter((w) => w.result === 'ok')
        .map((w) => ({ token: w.token, writer: w.name, read: (w as { read: number }).read, wrote: (w as { wrote: number }).wrote }))
        .sort((a, b) => a.wrote - b.wrote || a.token - b.token);
      const raw = await r.get(keys.data);
      const final = raw === null ? { v: 0, token: 0, writer: '' } : (JSON.parse(raw) as RedisCounterValue);
      const check = checkFencedRun(run, accepted, { counter: final.v, fence: Number((await r.get(keys.fence)) ?? 0) });
      assertFencedRun(run, check, started, (l) => t.diagnostic(l));
      assert.equal(final.token, accepted.at(-1)?.token, 'the stored value is the last accepted write');
    });

    it("examples/fenced-inventory-redis.ts: the paused worker's late write is refused and no sale is lost", async () => {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(repoRoot, 'examples', 'fenced-inventory-redis.ts'), '--endpoints', cluster().endpoints.join(','), '--redis', server.socket], { cwd: repoRoot, timeout: 60_000 });
      assert.match(stdout, /worker-B got the lock after A's session expired \(token \d+\)/);
      assert.match(stdout, /refused by Redis: RLF01 stale fencing token \d+ \(highest \d+\)/);
      assert.match(stdout, /stock=98 written by worker-B/);
      assert.doesNotMatch(stdout, /!!!/);
    });
  });
});
