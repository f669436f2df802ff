// MySQL/MariaDB fencing (deploy/mysql/raftlock-fencing.sql and the SDK's mapFencingError)
// against a private MariaDB started for this file (test/support/mysql.ts: its own data dir
// and unix socket in a temp dir): loading twice, the procedure's rules, its row lock and
// what the waiting transaction's reads see at REPEATABLE READ, the privileges, the error
// mapping, a jepsen-lite style run of paused lock holders against a real cluster
// (test/support/fence-run.ts; seeded: RAFTLOCK_FENCE_SEED=N replays), and
// examples/fenced-inventory-mysql.ts. Skipped with one line when MariaDB is not installed.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { repoRoot } from '../support/cluster-harness.js';
import { suiteCluster } from '../support/suite-cluster.js';
import { findMariadb, startMariadb, type MysqlServer } from '../support/mysql.js';
import { MYSQL_COUNTER_TABLES } from '../support/fence-stores.js';
import { assertFencedRun, checkFencedRun, runFencedWorkers } from '../support/fence-run.js';
import { testSeed } from '../support/seed.js';
import { mapFencingError, StaleFencingTokenError } from '../../src/index.js';

const bins = findMariadb();
const skip = 'missing' in bins ? `skipped: ${bins.missing}` : false;
const fencingSql = readFileSync(join(repoRoot, 'deploy', 'mysql', 'raftlock-fencing.sql'), 'utf8');

type Conn = mysql.Connection;
interface SqlError {
  errno?: number;
  sqlState?: string;
  sqlMessage?: string;
}

describe('MySQL/MariaDB fencing (raftlock_fence)', { skip }, () => {
  let server: MysqlServer;
  const conns: Conn[] = [];
  const connect = async (o: Partial<mysql.ConnectionOptions> = {}): Promise<Conn> => {
    const c = await mysql.createConnection({ ...server.config, ...o });
    conns.push(c);
    return c;
  };
  let db: Conn;
  const highest = async (resource: string): Promise<string | undefined> => {
    const [rows] = await db.query<mysql.RowDataPacket[]>('SELECT CAST(token AS CHAR) AS token FROM raftlock_fence WHERE resource = ?', [resource]);
    return rows[0]?.token as string | undefined;
  };
  /** the error a statement fails with (undefined when it succeeds) */
  const failure = async (p: Promise<unknown>): Promise<SqlError | undefined> => {
    try {
      await p;
      return undefined;
    } catch (err) {
      return err as SqlError;
    }
  };
  const connectionId = async (c: Conn): Promise<number> => Number((await c.query<mysql.RowDataPacket[]>('SELECT CONNECTION_ID() AS id'))[0][0]!.id);
  /** until InnoDB lists each of these connections' transactions as waiting for a lock */
  const lockWaits = async (ids: number[], what: string): Promise<void> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [rows] = await db.query<mysql.RowDataPacket[]>('SELECT trx_mysql_thread_id AS id, trx_state AS state FROM information_schema.INNODB_TRX');
      if (ids.every((id) => rows.some((r) => Number(r.id) === id && r.state === 'LOCK WAIT'))) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (connections ${ids.join(', ')}); InnoDB's transactions: ${JSON.stringify(rows)}`);
      // InnoDB refreshes INNODB_TRX only when nobody has read it for 100 ms: poll slower than that
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const load = (): void => {
    const r = server.client(fencingSql);
    assert.equal(r.status, 0, `the mariadb client loads deploy/mysql/raftlock-fencing.sql: ${r.stderr}`);
  };

  before(async () => {
    if ('missing' in bins) return;
    server = await startMariadb(bins);
    load();
    db = await connect();
  });
  after(async () => {
    await Promise.allSettled(conns.map((c) => c.end()));
    await server?.close();
  });

  it('loads twice with the command-line client and keeps the recorded tokens', async () => {
    await db.query("CALL raftlock_fence('install/again', 7)");
    load();
    assert.equal(await highest('install/again'), '7');
    const e = await failure(db.query("CALL raftlock_fence('install/again', 6)"));
    assert.match(e?.sqlMessage ?? '', /^RLF01 /);
  });

  it('5 ok, 5 ok, 4 → RLF01, 6 ok; bad input gets its own SQLSTATE', async () => {
    await db.query("CALL raftlock_fence('rules', 5)");
    await db.query("CALL raftlock_fence('rules', 5)"); // the same holder writes twice
    assert.equal(await highest('rules'), '5');
    const stale = await failure(db.query("CALL raftlock_fence('rules', 4)"));
    assert.equal(stale?.errno, 1644);
    assert.equal(stale?.sqlState, '45000');
    assert.equal(stale?.sqlMessage, 'RLF01 stale fencing token 4 (highest 5) for rules');
    assert.equal(await highest('rules'), '5');
    await db.query("CALL raftlock_fence('rules', 6)");
    assert.equal(await highest('rules'), '6');
    await db.query("CALL raftlock_fence('rules', 9000000000)"); // beyond 32 bits
    assert.equal(await highest('rules'), '9000000000');
    await db.query("CALL raftlock_fence('other', 1)"); // resources are independent
    assert.equal(await highest('other'), '1');
    await db.query("CALL raftlock_fence('Other', 0)"); // and differ by case
    assert.equal(await highest('Other'), '0');
    assert.equal((await failure(db.query("CALL raftlock_fence('rules', -1)")))?.sqlState, '22003');
    assert.equal((await failure(db.query('CALL raftlock_fence(NULL, 3)')))?.sqlState, '22004');
    assert.equal((await failure(db.query("CALL raftlock_fence('rules', NULL)")))?.sqlState, '22004');
    assert.equal((await failure(db.query('CALL raftlock_fence(?, 1)', ['x'.repeat(256)])))?.sqlState, '22001', 'a resource over 255 characters is refused, not cut');
    // any characters, whatever the database's default character set; the message is cut at
    // MySQL's 128 characters, the RLF01 prefix first
    const wide = `請求書/${'é'.repeat(240)}`;
    await db.query('CALL raftlock_fence(?, 3)', [wide]);
    const cut = await failure(db.query('CALL raftlock_fence(?, 2)', [wide]));
    assert.equal(cut?.sqlMessage, `RLF01 stale fencing token 2 (highest 3) for ${wide}`.slice(0, 128));
  });

  it('a refusal leaves the transaction open, its writes undone only by the ROLLBACK the client sends', async () => {
    const c = await connect();
    await c.query('CREATE TABLE rb (id INT PRIMARY KEY, v VARCHAR(20))');
    await c.query("INSERT INTO rb VALUES (1, 'init')");
    await c.query("CALL raftlock_fence('rb', 3)");
    await c.query('START TRANSACTION');
    await c.query("UPDATE rb SET v = 'before' WHERE id = 1");
    assert.match((await failure(c.query("CALL raftlock_fence('rb', 2)")))?.sqlMessage ?? '', /^RLF01 /);
    const [[open]] = await c.query<mysql.RowDataPacket[]>('SELECT @@in_transaction AS open');
    assert.equal(open!.open, 1, 'MySQL does not abort the transaction on an error (docs: the client must roll back)');
    await c.query('ROLLBACK');
    const [[row]] = await db.query<mysql.RowDataPacket[]>('SELECT v FROM rb WHERE id = 1');
    assert.equal(row!.v, 'init');
  });

  it("two transactions: T2's fence 9 waits for T1's uncommitted 10; after T1 commits, 9 → RLF01, and T3's 11 reads T1's write", async () => {
    const [t1, t2, t3] = [await connect(), await connect(), await connect()];
    await db.query('CREATE TABLE inv (id INT PRIMARY KEY, stock INT NOT NULL)');
    await db.query('INSERT INTO inv VALUES (1, 100)');
    const [id2, id3] = [await connectionId(t2), await connectionId(t3)];
    await t1.query('START TRANSACTION');
    await t1.query("CALL raftlock_fence('rowlock', 10)");
    await t1.query('UPDATE inv SET stock = 99 WHERE id = 1');
    await t2.query('START TRANSACTION');
    await t3.query('START TRANSACTION');
    // each transaction ends as soon as its fence answers: whoever has the row next holds it until then
    const lower = t2.query("CALL raftlock_fence('rowlock', 9)").then(
      async () => (await t2.query('COMMIT'), 'ok'),
      async (e: SqlError) => (await t2.query('ROLLBACK'), e.sqlMessage),
    );
    const higher = t3.query("CALL raftlock_fence('rowlock', 11)").then(
      async () => {
        // a plain read at REPEATABLE READ after the fence: its snapshot is taken now, after T1's commit
        const [[row]] = await t3.query<mysql.RowDataPacket[]>('SELECT stock FROM inv WHERE id = 1');
        await t3.query('COMMIT');
        return `ok, read stock=${row!.stock}`;
      },
      async (e: SqlError) => (await t3.query('ROLLBACK'), e.sqlMessage),
    );
    await lockWaits([id2, id3], 'T2 and T3 to wait for the row lock T1 holds');
    await t1.query('COMMIT');
    // T2 and T3 queue for the row in either order: 9 meets 10, or 11 if T3 went first
    assert.match((await lower) ?? '', /^RLF01 stale fencing token 9 \(highest 1[01]\) for rowlock$/);
    assert.equal(await higher, 'ok, read stock=99');
    assert.equal(await highest('rowlock'), '11');
  });

  it("the fence comes first: a plain read BEFORE it keeps the snapshot from before the previous holder's commit", async () => {
    // What the script's header warns about, so that the warning stays true: the fence
    // still orders the writers, but a value read before it may be old.
    const [t1, t3] = [await connect(), await connect()];
    const id3 = await connectionId(t3);
    await db.query('CREATE TABLE early (id INT PRIMARY KEY, v VARCHAR(20))');
    await db.query("INSERT INTO early VALUES (1, 'init')");
    await t1.query('START TRANSACTION');
    await t1.query("CALL raftlock_fence('early', 10)");
    await t1.query("UPDATE early SET v = 'by 10' WHERE id = 1");
    await t3.query('START TRANSACTION');
    const [[before]] = await t3.query<mysql.RowDataPacket[]>('SELECT v FROM early WHERE id = 1');
    const fenced = t3.query("CALL raftlock_fence('early', 11)");
    await lockWaits([id3], 'T3 to wait for the row lock T1 holds');
    await t1.query('COMMIT');
    await fenced;
    const [[after]] = await t3.query<mysql.RowDataPacket[]>('SELECT v FROM early WHERE id = 1');
    const [[locking]] = await t3.query<mysql.RowDataPacket[]>('SELECT v FROM early WHERE id = 1 FOR UPDATE');
    await t3.query('COMMIT');
    assert.equal(before!.v, 'init');
    assert.equal(after!.v, 'init', 'the snapshot was taken by the read before the fence');
    assert.equal(locking!.v, 'by 10', 'a locking read sees the newest commit');
  });

  it("a transaction whose snapshot is older than the newer holder's commit is still refused: the fence reads with a lock", async () => {
    const [t1, t2] = [await connect(), await connect()];
    await t2.query('START TRANSACTION');
    await t2.query("SELECT COUNT(*) FROM raftlock_fence WHERE resource = 'old-snapshot'"); // T2's snapshot: no token yet
    await t1.query("CALL raftlock_fence('old-snapshot', 10)"); // committed after T2's snapshot
    const e = await failure(t2.query("CALL raftlock_fence('old-snapshot', 9)"));
    await t2.query('ROLLBACK');
    assert.equal(e?.sqlMessage, 'RLF01 stale fencing token 9 (highest 10) for old-snapshot');
  });

  it('privileges: EXECUTE on the database is enough to fence, and the application cannot lower a token', async () => {
    await db.query("CREATE USER 'app'@'localhost'");
    await db.query(`GRANT EXECUTE ON \`${server.database}\`.* TO 'app'@'localhost'`);
    const app = await connect({ user: 'app' });
    await app.query("CALL raftlock_fence('grants', 4)");
    assert.match((await failure(app.query("CALL raftlock_fence('grants', 3)")))?.sqlMessage ?? '', /^RLF01 /);
    assert.equal((await failure(app.query("UPDATE raftlock_fence SET token = 0 WHERE resource = 'grants'")))?.errno, 1142, 'UPDATE command denied');
    load(); // reloading keeps a grant on the database
    await app.query("CALL raftlock_fence('grants', 5)");
    assert.equal(await highest('grants'), '5');
  });

  it("mapFencingError: mysql2's RLF01 error becomes a StaleFencingTokenError; any other error passes through", async () => {
    const err = await failure(db.query("CALL raftlock_fence('rules', 2)"));
    const withContext = mapFencingError(err, { resource: 'rules', token: 2 });
    assert.ok(withContext instanceof StaleFencingTokenError, String(withContext));
    assert.equal(withContext.code, 'stale_fencing_token');
    assert.equal(withContext.resource, 'rules');
    assert.equal(withContext.token, 2n);
    assert.equal(withContext.highestToken, 9000000000n);
    assert.equal(withContext.cause, err);
    assert.match(withContext.message, /^MySQL\/MariaDB refused the write to "rules": fencing token 2 is stale \(a holder with token 9000000000 has written\)/);
    const bare = mapFencingError(err) as StaleFencingTokenError; // all from the message
    assert.deepEqual([bare.resource, bare.token, bare.highestToken], ['rules', 2n, 9000000000n]);
    const other = await failure(db.query('CALL raftlock_fence(NULL, 1)'));
    assert.equal(mapFencingError(other), other);
    const syntax = await failure(db.query('SELEC 1'));
    assert.equal(mapFencingError(syntax, { resource: 'rules', token: 1 }), syntax);
  });

  describe('against a real raftlock cluster', () => {
    const cluster = suiteCluster({ nodes: 3 });

    it('jepsen-lite style: workers paused past their TTL write through the fence, and no stale write lands', async (t) => {
      const seed = testSeed('RAFTLOCK_FENCE_SEED', { what: 'fenced MySQL run', replay: 'node --test dist/test/mysql/fencing.test.js', print: (l) => t.diagnostic(l) });
      for (const sql of MYSQL_COUNTER_TABLES) await db.query(sql);
      const lock = 'stock/widgets';
      const started = Date.now();
      const run = await runFencedWorkers({
        endpoints: cluster().endpoints, store: 'mysql', target: server.url, lock, seed,
        fenceOf: async () => Number((await highest(lock)) ?? 0),
        log: (l) => t.diagnostic(l),
      });
      const [log] = await db.query<mysql.RowDataPacket[]>('SELECT token, writer, v_read, v_written FROM fenced_log ORDER BY seq');
      const [[counter]] = await db.query<mysql.RowDataPacket[]>('SELECT v FROM fenced_counter WHERE id = 1');
      const accepted = log.map((r) => ({ token: Number(r.token), writer: String(r.writer), read: Number(r.v_read), wrote: Number(r.v_written) }));
      const check = checkFencedRun(run, accepted, { counter: Number(counter!.v), fence: Number((await highest(lock)) ?? 0) });
      assertFencedRun(run, check, started, (l) => t.diagnostic(l));
    });

    it("examples/fenced-inventory-mysql.ts: the paused worker's late write is refused and no sale is lost", async () => {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(repoRoot, 'examples', 'fenced-inventory-mysql.ts'), '--endpoints', cluster().endpoints.join(','), '--mysql', server.url], { cwd: repoRoot, timeout: 60_000 });
      assert.match(stdout, /worker-B got the lock after A's session expired \(token \d+\)/);
      assert.match(stdout, /refused by MySQL\/MariaDB: RLF01 stale fencing token \d+ \(highest \d+\)/);
      assert.match(stdout, /stock=98 written by worker-B/);
      assert.doesNotMatch(stdout, /!!!/);
    });
  });
});
