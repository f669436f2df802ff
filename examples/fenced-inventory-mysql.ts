// The inventory example against MySQL or MariaDB: the database itself refuses a paused
// lock holder's late write.
//
//   npm run build && node bin/raftlock.js cluster &            # or any running cluster
//   node --import tsx examples/fenced-inventory-mysql.ts --mysql mysql://USER:PASS@HOST/DB \
//        [--endpoints http://127.0.0.1:7001,…]
//
// (a unix socket: mysql://USER@localhost/DB?socketPath=/run/mysqld/mysqld.sock; without
// --mysql, MYSQL_URL). The example installs deploy/mysql/raftlock-fencing.sql (installing
// it twice is harmless) and a demo table raftlock_example_inventory, and resets the fencing
// record of its resource, `inventory/widgets`, so that it can run again against a fresh
// cluster whose tokens start over.
//
// Every sale is one transaction that fences first: START TRANSACTION; CALL
// raftlock_fence('inventory/widgets', token); read the stock; write it; COMMIT. Worker A
// takes the lock and sells a widget. It reads the stock for a second sale, and then it is
// paused — a GC pause, a stopped VM: nothing renews its session — for longer than its
// session's ttl. The cluster expires A's session and worker B, waiting in the queue, gets
// the lock with a larger fencing token and sells a widget. When A resumes, it writes the
// stock it computed before the pause: MySQL refuses it (RLF01; the SDK's mapFencingError
// gives a StaleFencingTokenError), and no sale is lost.
import { readFileSync } from 'node:fs';
import mysql from 'mysql2/promise';
import { mapFencingError, RaftlockClient, StaleFencingTokenError } from '../src/index.js';

const RESOURCE = 'inventory/widgets';
const TTL_MS = 1000; // the smallest ttl `npm start`'s cluster allows (min_ttl_ms)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const endpoints = arg('--endpoints') ?? process.env.RAFTLOCK_ENDPOINTS ?? 'http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003';
const url = arg('--mysql') ?? process.env.MYSQL_URL;
const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The statements of a .sql file written for the mysql/mariadb command-line client, for a
 * driver that runs one statement per call: comment lines dropped, split at the current
 * delimiter, which `DELIMITER x` lines change (around the procedure's body).
 */
function statements(sql: string): string[] {
  const out: string[] = [];
  let delimiter = ';';
  let current = '';
  for (const line of sql.split('\n')) {
    const d = /^DELIMITER\s+(\S+)\s*$/i.exec(line);
    if (d) {
      delimiter = d[1]!;
      continue;
    }
    if (/^\s*--/.test(line) || (current === '' && line.trim() === '')) continue;
    current += `${line}\n`;
    if (line.trimEnd().endsWith(delimiter)) {
      out.push(current.trimEnd().slice(0, -delimiter.length));
      current = '';
    }
  }
  if (current.trim() !== '') throw new Error(`the SQL file ends inside a statement: ${current.slice(0, 80)}…`);
  return out;
}

async function setup(db: mysql.Connection): Promise<void> {
  for (const s of statements(readFileSync(new URL('../deploy/mysql/raftlock-fencing.sql', import.meta.url), 'utf8'))) await db.query(s);
  await db.query('CREATE TABLE IF NOT EXISTS raftlock_example_inventory (item VARCHAR(64) PRIMARY KEY, stock INT NOT NULL, written_by VARCHAR(64), token BIGINT) ENGINE = InnoDB');
  await db.query("REPLACE INTO raftlock_example_inventory (item, stock) VALUES ('widgets', 100)");
  // Demo only: a fresh cluster's tokens start over. Never delete fencing records in production.
  await db.query('DELETE FROM raftlock_fence WHERE resource = ?', [RESOURCE]);
}

/**
 * One fenced write: START TRANSACTION; CALL raftlock_fence; `work` (reads and writes);
 * COMMIT. A stale token rejects with StaleFencingTokenError, after a ROLLBACK: MySQL keeps
 * the transaction open after an error, so the client must end it.
 */
async function fenced<T>(db: mysql.Connection, token: number, work: () => Promise<T>): Promise<T> {
  await db.query('START TRANSACTION');
  try {
    await db.query('CALL raftlock_fence(?, ?)', [RESOURCE, token]);
    const result = await work();
    await db.query('COMMIT');
    return result;
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw mapFencingError(err, { resource: RESOURCE, token });
  }
}

async function readStock(db: mysql.Connection): Promise<number> {
  const [rows] = await db.query<mysql.RowDataPacket[]>("SELECT stock FROM raftlock_example_inventory WHERE item = 'widgets'");
  return Number(rows[0]!.stock);
}

function writeStock(db: mysql.Connection, stock: number, who: string, token: number): Promise<unknown> {
  return db.query("UPDATE raftlock_example_inventory SET stock = ?, written_by = ?, token = ? WHERE item = 'widgets'", [stock, who, token]);
}

async function main(): Promise<void> {
  if (url === undefined) throw new Error('give the database as --mysql mysql://USER:PASS@HOST/DB (or MYSQL_URL)');
  const client = new RaftlockClient({ endpoints });
  const dbA = await mysql.createConnection(url);
  const dbB = await mysql.createConnection(url);
  try {
    await setup(dbA);

    // ---- worker A: takes the lock and sells one under it --------------------------------
    // A one-shot acquire opens a session of TTL_MS that only A's own calls renew.
    const a = await client.acquire(RESOURCE, { ttlMs: TTL_MS, owner: 'worker-A' });
    const first = await fenced(dbA, a.fencingToken, async () => {
      const stock = await readStock(dbA);
      await writeStock(dbA, stock - 1, 'worker-A', a.fencingToken);
      return stock - 1;
    });
    console.log(`worker-A holds ${RESOURCE} (token ${a.fencingToken}) and sold one: stock=${first}`);
    const staleRead = await readStock(dbA);
    console.log(`worker-A read stock=${staleRead} for its next sale, and is paused for longer than its ttl (${TTL_MS} ms)…`);
    const pausedSince = Date.now();

    // ---- worker B: waits in the queue, gets the lock when A's session expires ------------
    await client.withLock(
      RESOURCE,
      async ({ fencingToken, signal }) => {
        signal.throwIfAborted();
        const stock = await fenced(dbB, fencingToken, async () => {
          const s = await readStock(dbB); // read after the fence: sees every earlier holder's write
          await writeStock(dbB, s - 1, 'worker-B', fencingToken);
          return s - 1;
        });
        console.log(`worker-B got the lock after A's session expired (token ${fencingToken}) and sold one: stock=${stock}`);
      },
      { ttlMs: 5000, waitMs: 30_000, owner: 'worker-B' },
    );

    // ---- worker A resumes and, unaware, writes the stock it computed before the pause ----
    await delay(Math.max(0, 2 * TTL_MS - (Date.now() - pausedSince)));
    console.log(`worker-A resumes after ${Date.now() - pausedSince} ms and writes stock=${staleRead - 1} with its old token ${a.fencingToken}:`);
    try {
      await fenced(dbA, a.fencingToken, () => writeStock(dbA, staleRead - 1, 'worker-A', a.fencingToken));
      console.log('  !!! MySQL accepted the stale write — this must never happen');
      process.exitCode = 1;
    } catch (err) {
      if (!(err instanceof StaleFencingTokenError)) throw err;
      console.log(`  refused by MySQL/MariaDB: ${(err.cause as { sqlMessage?: string }).sqlMessage}`);
    }

    const [rows] = await dbB.query<mysql.RowDataPacket[]>("SELECT stock, written_by FROM raftlock_example_inventory WHERE item = 'widgets'");
    const row = rows[0];
    console.log(`inventory: stock=${row?.stock} written by ${row?.written_by}`);
    if (row?.written_by !== 'worker-B' || Number(row.stock) !== 98) {
      console.log("  !!! a sale was lost: expected stock=98 written by worker-B");
      process.exitCode = 1;
    } else {
      console.log('  two sales, two widgets gone: no sale lost');
    }
  } finally {
    await Promise.allSettled([dbA.end(), dbB.end(), client.close()]);
  }
}

main().catch((err: unknown) => {
  console.error(`fenced-inventory-mysql: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
