// Fencing a PostgreSQL table: the database itself refuses a stale lock holder's write.
//
//   npm run build && node bin/raftlock.js cluster &            # or any running cluster
//   node --import tsx examples/fenced-postgres.ts --database postgres://user@host/db \
//        [--endpoints http://127.0.0.1:7001,…]
//
// (without --database the usual PG* variables / DATABASE_URL apply). The example installs
// deploy/postgres/raftlock-fencing.sql (installing it twice is harmless) and a demo table
// raftlock_example_invoice, and resets the fencing record of its resource, `invoice/42`,
// so that it can run again against a fresh cluster whose tokens start over.
//
// Worker A takes the lock and writes invoice 42 under it. Then A is paused — a GC pause, a
// stopped VM, a slow disk: nothing renews its session — for longer than its session's
// ttl. The cluster expires A's session and worker B, waiting in the queue, gets the lock
// with a larger fencing token and writes. When A resumes, it writes its stale decision:
// PostgreSQL refuses it (raftlock_fence raises RLF01, the SDK throws
// StaleFencingTokenError), and the row keeps B's value.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { fencedQuery, RaftlockClient, StaleFencingTokenError } from '../src/index.js';

const RESOURCE = 'invoice/42';
const TTL_MS = 1000; // the smallest ttl `npm start`'s cluster allows (min_ttl_ms)

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const endpoints = arg('--endpoints') ?? process.env.RAFTLOCK_ENDPOINTS ?? 'http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003';
const database = arg('--database') ?? process.env.DATABASE_URL;
const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function connect(name: string): Promise<pg.Client> {
  const c = new pg.Client({ ...(database !== undefined ? { connectionString: database } : {}), application_name: name });
  await c.connect();
  return c;
}

const WRITE = 'UPDATE raftlock_example_invoice SET status = $1, written_by = $2, token = $3 WHERE id = 42';

async function setup(db: pg.Client): Promise<void> {
  await db.query(readFileSync(new URL('../deploy/postgres/raftlock-fencing.sql', import.meta.url), 'utf8'));
  await db.query('CREATE TABLE IF NOT EXISTS raftlock_example_invoice (id int PRIMARY KEY, status text NOT NULL, written_by text, token bigint)');
  await db.query("INSERT INTO raftlock_example_invoice (id, status) VALUES (42, 'open') ON CONFLICT (id) DO UPDATE SET status = 'open', written_by = NULL, token = NULL");
  // Demo only: a fresh cluster's tokens start over. Never delete fencing records in production.
  await db.query('DELETE FROM raftlock_fence WHERE resource = $1', [RESOURCE]);
}

async function main(): Promise<void> {
  const client = new RaftlockClient({ endpoints });
  const dbA = await connect('worker-A');
  const dbB = await connect('worker-B');
  try {
    await setup(dbA);

    // ---- worker A: takes the lock and writes under it ------------------------------------
    // A one-shot acquire opens a session of TTL_MS that only A's own calls renew.
    const a = await client.acquire(RESOURCE, { ttlMs: TTL_MS, owner: 'worker-A' });
    await fencedQuery(dbA, RESOURCE, a.fencingToken, WRITE, ['processing', 'worker-A', a.fencingToken]);
    console.log(`worker-A holds ${RESOURCE} (token ${a.fencingToken}) and wrote status=processing`);
    console.log(`worker-A is paused for longer than its ttl (${TTL_MS} ms): nothing renews its session…`);
    const pausedSince = Date.now();

    // ---- worker B: waits in the queue, gets the lock when A's session expires ------------
    await client.withLock(
      RESOURCE,
      async ({ fencingToken, signal }) => {
        signal.throwIfAborted();
        await fencedQuery(dbB, RESOURCE, fencingToken, WRITE, ['paid', 'worker-B', fencingToken]);
        console.log(`worker-B got the lock after A's session expired (token ${fencingToken}) and wrote status=paid`);
      },
      { ttlMs: 5000, waitMs: 30_000, owner: 'worker-B' },
    );

    // ---- worker A resumes and, unaware, writes its stale decision ------------------------
    await delay(Math.max(0, 2 * TTL_MS - (Date.now() - pausedSince)));
    console.log(`worker-A resumes after ${Date.now() - pausedSince} ms and writes status=cancelled with its old token ${a.fencingToken}:`);
    try {
      await fencedQuery(dbA, RESOURCE, a.fencingToken, WRITE, ['cancelled', 'worker-A', a.fencingToken]);
      console.log('  !!! PostgreSQL accepted the stale write — this must never happen');
      process.exitCode = 1;
    } catch (err) {
      if (!(err instanceof StaleFencingTokenError)) throw err;
      console.log(`  refused by PostgreSQL (SQLSTATE RLF01): ${err.message}`);
    }

    const row = (await dbB.query<{ status: string; written_by: string; token: string }>('SELECT status, written_by, token FROM raftlock_example_invoice WHERE id = 42')).rows[0];
    console.log(`invoice 42: status=${row?.status} written_by=${row?.written_by} token=${row?.token}`);
    if (row?.written_by !== 'worker-B' || row.status !== 'paid') {
      console.log("  !!! the row lost worker-B's write");
      process.exitCode = 1;
    } else {
      console.log("  the row keeps worker-B's value: no lost update");
    }
  } finally {
    await Promise.allSettled([dbA.end(), dbB.end(), client.close()]);
  }
}

main().catch((err: unknown) => {
  console.error(`fenced-postgres: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
