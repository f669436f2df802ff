// PostgreSQL fencing (deploy/postgres/raftlock-fencing.sql and the SDK's fencedQuery)
// against a real PostgreSQL started for this file (test/support/postgres.ts): the
// function's rules, its row lock (a second fencer waits for the first's commit),
// fencedQuery's transactions and typed error, 8 concurrent writers with interleaved tokens
// (seeded: RAFTLOCK_PG_SEED=N replays), and examples/fenced-postgres.ts against a real
// cluster. Skipped with one line when PostgreSQL is not installed.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { eventually, repoRoot } from '../support/cluster-harness.js';
import { suiteCluster } from '../support/suite-cluster.js';
import { findPostgresBin, startPostgres, type PgServer } from '../support/postgres.js';
import { testSeed } from '../support/seed.js';
import { fencedQuery, InvalidRequestError, StaleFencingTokenError } from '../../src/index.js';

const bin = findPostgresBin();
const skip = 'missing' in bin ? `skipped: ${bin.missing}` : false;
const fencingSql = readFileSync(join(repoRoot, 'deploy', 'postgres', 'raftlock-fencing.sql'), 'utf8');

/** mulberry32: a small seeded generator, so a failing interleaving replays from its seed */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('PostgreSQL fencing (raftlock_fence, fencedQuery)', { skip }, () => {
  let server: PgServer;
  const clients: pg.Client[] = [];
  const connect = async (): Promise<pg.Client> => {
    const c = new pg.Client(server.config);
    clients.push(c);
    await c.connect();
    return c;
  };
  let db: pg.Client;
  const highest = async (resource: string): Promise<string | undefined> =>
    (await db.query<{ token: string }>('SELECT token FROM raftlock_fence WHERE resource = $1', [resource])).rows[0]?.token;
  const sqlState = async (p: Promise<unknown>): Promise<string | undefined> => {
    try {
      await p;
      return undefined;
    } catch (err) {
      return (err as { code?: string }).code;
    }
  };

  before(async () => {
    if ('missing' in bin) return;
    server = await startPostgres({ bin: bin.dir });
    db = await connect();
    await db.query(fencingSql);
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.end()));
    await server?.close();
  });

  it('installs twice without error and keeps the recorded tokens', async () => {
    await db.query("SELECT raftlock_fence('install/again', 7)");
    await db.query(fencingSql);
    assert.equal(await highest('install/again'), '7');
    assert.equal(await sqlState(db.query("SELECT raftlock_fence('install/again', 6)")), 'RLF01');
  });

  it('records a higher or equal token and raises RLF01 for a lower one', async () => {
    await db.query("SELECT raftlock_fence('rules', 5)");
    await db.query("SELECT raftlock_fence('rules', 5)"); // the same holder writes twice
    assert.equal(await highest('rules'), '5');
    await assert.rejects(db.query("SELECT raftlock_fence('rules', 4)"), (e: pg.DatabaseError) => {
      assert.equal(e.code, 'RLF01');
      assert.match(e.message, /stale fencing token 4 for "rules": a holder with token 5 has written/);
      assert.equal(e.detail, 'resource=rules token=4 highest=5');
      return true;
    });
    await db.query("SELECT raftlock_fence('rules', 9000000000)"); // beyond 32 bits
    assert.equal(await highest('rules'), '9000000000');
    await db.query("SELECT raftlock_fence('other', 1)"); // resources are independent
    assert.equal(await highest('other'), '1');
    assert.equal(await sqlState(db.query("SELECT raftlock_fence('rules', -1)")), '22003');
    assert.equal(await sqlState(db.query('SELECT raftlock_fence(NULL, 3)')), '22004');
    assert.equal(await sqlState(db.query("SELECT raftlock_fence('rules', NULL)")), '22004');
  });

  it('holds a row lock: a second fencer of the resource waits for the first to commit, then compares', async () => {
    const t1 = await connect();
    const t2 = await connect();
    const t3 = await connect();
    const t2pid = (await t2.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const t3pid = (await t3.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await t1.query('BEGIN');
    await t1.query("SELECT raftlock_fence('rowlock', 10)");
    await t2.query('BEGIN');
    await t3.query('BEGIN');
    const lower = t2.query("SELECT raftlock_fence('rowlock', 9)").then(() => 'ok', (e: pg.DatabaseError) => e.code);
    const higher = t3.query("SELECT raftlock_fence('rowlock', 11)").then(() => 'ok', (e: pg.DatabaseError) => e.code);
    // Both wait on t1's row lock (not yet committed: they could not even see token 10).
    await eventually(async () => {
      const r = await db.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid = ANY($1)", [[t2pid, t3pid]]);
      return r.rowCount === 2;
    }, 10_000, 'both later fencers to wait for the first transaction');
    await t1.query('COMMIT');
    // Whichever gets the row next holds it until its transaction ends, so each one's
    // transaction is ended as soon as its fence answers.
    const [a, b] = await Promise.all([
      lower.then(async (code) => (await t2.query('ROLLBACK'), code)),
      higher.then(async (code) => (await t3.query(code === 'ok' ? 'COMMIT' : 'ROLLBACK'), code)),
    ]);
    assert.equal(a, 'RLF01');
    assert.equal(b, 'ok');
    assert.equal(await highest('rowlock'), '11');
  });

  it('fencedQuery: commits the write with a fresh token; a stale one throws StaleFencingTokenError and writes nothing', async () => {
    await db.query('CREATE TABLE fq (id int PRIMARY KEY, v text)');
    await db.query("INSERT INTO fq VALUES (1, 'init')");
    const w = await connect();
    const r = await fencedQuery<{ v: string }>(w, 'fq/1', 20, 'UPDATE fq SET v = $1 WHERE id = 1 RETURNING v', ['by 20']);
    assert.deepEqual(r.rows, [{ v: 'by 20' }]);
    assert.equal(r.rowCount, 1);
    await assert.rejects(fencedQuery(w, 'fq/1', 19n, 'UPDATE fq SET v = $1 WHERE id = 1', ['by 19']), (e: unknown) => {
      assert.ok(e instanceof StaleFencingTokenError, String(e));
      assert.equal(e.code, 'stale_fencing_token');
      assert.equal(e.resource, 'fq/1');
      assert.equal(e.token, 19n);
      assert.equal(e.highestToken, 20n);
      assert.equal((e.cause as pg.DatabaseError).code, 'RLF01');
      return true;
    });
    assert.equal((await db.query('SELECT v FROM fq WHERE id = 1')).rows[0].v, 'by 20');
    // The connection is usable afterwards (the transaction was rolled back), and a failing
    // write rolls back the fence with it.
    assert.equal(await sqlState(fencedQuery(w, 'fq/1', 25, 'UPDATE fq SET nope = 1')), '42703');
    assert.equal(await highest('fq/1'), '20');
    // caller's transaction: the fence and the write join it; the caller commits
    await w.query('BEGIN');
    await fencedQuery(w, 'fq/1', 21, 'UPDATE fq SET v = $1 WHERE id = 1', ['by 21'], { transaction: 'caller' });
    await w.query("UPDATE fq SET v = v || ' (same transaction)' WHERE id = 1");
    await w.query('COMMIT');
    assert.equal((await db.query('SELECT v FROM fq WHERE id = 1')).rows[0].v, 'by 21 (same transaction)');
  });

  it('fencedQuery refuses bad input with a clear error and sends nothing', async () => {
    const sent: string[] = [];
    const fake = { query: async (text: string) => void sent.push(text) };
    const pool = new pg.Pool(server.config);
    try {
      const cases: [string, Promise<unknown>][] = [
        ['a pg.Pool', fencedQuery(pool, 'r', 1, 'SELECT 1')],
        ['no client', fencedQuery(null as unknown as pg.Client, 'r', 1, 'SELECT 1')],
        ['empty resource', fencedQuery(fake, '', 1, 'SELECT 1')],
        ['token 0', fencedQuery(fake, 'r', 0, 'SELECT 1')],
        ['fractional token', fencedQuery(fake, 'r', 1.5, 'SELECT 1')],
        ['token beyond bigint', fencedQuery(fake, 'r', 2n ** 63n, 'SELECT 1')],
        ['empty sql', fencedQuery(fake, 'r', 1, ' ')],
        ['params not an array', fencedQuery(fake, 'r', 1, 'SELECT 1', 'x' as unknown as unknown[])],
        ['bad transaction mode', fencedQuery(fake, 'r', 1, 'SELECT 1', [], { transaction: 'nested' as 'own' })],
      ];
      for (const [what, p] of cases) await assert.rejects(p, (e: unknown) => e instanceof InvalidRequestError && /^fencedQuery: /.test(e.message), what);
      assert.deepEqual(sent, []);
    } finally {
      await pool.end();
    }
  });

  it('8 concurrent writers with interleaved tokens: the highest token wins, stale ones get RLF01, no lost update', async () => {
    const seed = testSeed('RAFTLOCK_PG_SEED', { what: '8 writers', replay: 'node --test dist/test/postgres/fencing.test.js' });
    const rand = rng(seed);
    await db.query("CREATE TABLE account (id int PRIMARY KEY, balance int NOT NULL, tokens bigint[] NOT NULL DEFAULT '{}')");
    await db.query('INSERT INTO account (id, balance) VALUES (1, 0)');
    const WRITERS = 8;
    const ROUNDS = 6;
    // Round r hands tokens r*8+1 … r*8+8 to the writers in a shuffled order: writers race
    // each other within and across rounds, so lower tokens often arrive after higher ones.
    const tokens: number[][] = Array.from({ length: WRITERS }, () => []);
    for (let r = 0; r < ROUNDS; r++) {
      const round = Array.from({ length: WRITERS }, (_, i) => r * WRITERS + i + 1);
      for (let i = round.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [round[i], round[j]] = [round[j]!, round[i]!];
      }
      round.forEach((t, w) => tokens[w]!.push(t));
    }
    const jitter = tokens.map((ts) => ts.map(() => Math.floor(rand() * 4)));
    const conns = await Promise.all(tokens.map(() => connect()));
    const accepted: number[] = [];
    const refused: { token: number; highest: bigint | undefined }[] = [];
    // A read-modify-write in the caller's transaction: read after the fence, write back
    // +1. Without the fence's row lock two writers would read the same balance (lost update).
    const write = async (c: pg.Client, token: number): Promise<void> => {
      await c.query('BEGIN');
      try {
        const r = await fencedQuery<{ balance: number }>(c, 'account/1', token, 'SELECT balance FROM account WHERE id = 1', [], { transaction: 'caller' });
        const balance = r.rows[0]!.balance;
        await new Promise((res) => setImmediate(res)); // let the others queue up behind us
        await c.query('UPDATE account SET balance = $1, tokens = array_append(tokens, $2::bigint) WHERE id = 1', [balance + 1, token]);
        await c.query('COMMIT');
        accepted.push(token);
      } catch (err) {
        await c.query('ROLLBACK');
        if (!(err instanceof StaleFencingTokenError)) throw err;
        refused.push({ token, highest: err.highestToken });
      }
    };
    await Promise.all(conns.map(async (c, w) => {
      for (let r = 0; r < ROUNDS; r++) {
        if (jitter[w]![r]! > 0) await new Promise((res) => setTimeout(res, jitter[w]![r]!));
        await write(c, tokens[w]![r]!);
      }
    }));
    // Then every writer replays its first token, like a holder paused past its lease:
    // the top token has been accepted by now, so each of these is refused.
    await Promise.all(conns.map((c, w) => write(c, tokens[w]![0]!)));
    const row = (await db.query<{ balance: number; tokens: string[] }>('SELECT balance, tokens FROM account WHERE id = 1')).rows[0]!;
    const committed = row.tokens.map(Number);
    const max = WRITERS * ROUNDS;
    assert.equal(accepted.length + refused.length, WRITERS * (ROUNDS + 1), 'every write was accepted or refused');
    assert.equal(row.balance, accepted.length, 'no lost update: every accepted write counted');
    assert.deepEqual([...committed].sort((a, b) => a - b), [...accepted].sort((a, b) => a - b));
    assert.deepEqual(committed, [...committed].sort((a, b) => a - b), `writes committed in token order: ${committed.join(',')}`);
    assert.equal(committed.at(-1), max, 'the highest token wins');
    assert.equal(await highest('account/1'), String(max));
    assert.ok(refused.length >= WRITERS, `the replayed stale tokens were refused (refused: ${refused.length})`);
    for (const r of refused) assert.ok(r.highest !== undefined && r.highest > BigInt(r.token), `refused ${r.token} only because a higher token (${r.highest}) was recorded`);
    console.log(`# 8 writers: ${accepted.length} accepted, ${refused.length} refused with RLF01`);
  });

  describe('examples/fenced-postgres.ts against a real cluster', () => {
    const cluster = suiteCluster({ nodes: 1 });

    it("worker A's late write is refused by PostgreSQL; the row keeps worker B's value", async () => {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(repoRoot, 'examples', 'fenced-postgres.ts'), '--endpoints', cluster().endpoints.join(','), '--database', server.url], { cwd: repoRoot, timeout: 60_000 });
      assert.match(stdout, /worker-B got the lock after A's session expired \(token \d+\)/);
      assert.match(stdout, /refused by PostgreSQL \(SQLSTATE RLF01\)/);
      assert.match(stdout, /invoice 42: status=paid written_by=worker-B/);
      assert.doesNotMatch(stdout, /!!!/);
    });
  });
});
