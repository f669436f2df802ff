// One fenced read-modify-write of a counter, per store, as a service following
// docs/client.md "Fencing in your database" would write it: fence first, then read, then
// write, with the database as the judge. Used by test/support/fence-worker.ts (the worker
// processes of the fenced-store runs, test/support/fence-run.ts).
//
// - mysql: START TRANSACTION; CALL raftlock_fence(resource, token); SELECT the counter;
//   UPDATE it; INSERT a row into fenced_log (the store's own record of every accepted
//   write, in commit order: its AUTO_INCREMENT is taken under the fence's row lock); COMMIT.
// - redis: EVAL FENCE_LUA; GET the counter; EVAL FENCED_SET_LUA with {v, token, writer}.
import mysql from 'mysql2/promise';
import { Redis } from 'ioredis';
import { FENCE_LUA, FENCED_SET_LUA, StaleFencingTokenError, mapFencingError } from '../../src/index.js';

export type StoreKind = 'mysql' | 'redis';

/** What one write attempt came to. `ok`: the store accepted it; `stale`: RLF01. */
export type WriteOutcome =
  | { result: 'ok'; read: number; wrote: number }
  | { result: 'stale'; highest: string | undefined }
  | { result: 'error'; message: string };

export interface FencedCounter {
  /** read the counter and write it + 1, fenced by `token`; `between` runs after the read */
  increment(token: number, writer: string, between: () => Promise<void>): Promise<WriteOutcome>;
  close(): Promise<void>;
}

/** The MySQL tables the mysql counter uses (the test creates them). */
export const MYSQL_COUNTER_TABLES = [
  'CREATE TABLE fenced_counter (id INT PRIMARY KEY, v INT NOT NULL, token BIGINT, writer VARCHAR(64)) ENGINE = InnoDB',
  'CREATE TABLE fenced_log (seq INT AUTO_INCREMENT PRIMARY KEY, token BIGINT NOT NULL, writer VARCHAR(64) NOT NULL, v_read INT NOT NULL, v_written INT NOT NULL) ENGINE = InnoDB',
  'INSERT INTO fenced_counter (id, v) VALUES (1, 0)',
];

/** The Redis keys of a counter guarded by the fence of `resource`, in one hash slot. */
export function redisCounterKeys(resource: string): { fence: string; data: string } {
  return { fence: `{${resource}}:fence`, data: `{${resource}}:counter` };
}

/** the counter's value as stored in Redis */
export interface RedisCounterValue {
  v: number;
  token: number;
  writer: string;
}

export async function openFencedCounter(kind: StoreKind, target: string, resource: string): Promise<FencedCounter> {
  return kind === 'mysql' ? mysqlCounter(target, resource) : redisCounter(target, resource);
}

function refused(err: unknown, resource: string, token: number): WriteOutcome {
  const m = mapFencingError(err, { resource, token });
  if (m instanceof StaleFencingTokenError) return { result: 'stale', highest: m.highestToken?.toString() };
  return { result: 'error', message: err instanceof Error ? err.message : String(err) };
}

async function mysqlCounter(url: string, resource: string): Promise<FencedCounter> {
  const c = await mysql.createConnection(url);
  return {
    async increment(token, writer, between) {
      await c.query('START TRANSACTION');
      try {
        await c.query('CALL raftlock_fence(?, ?)', [resource, token]);
        const [rows] = await c.query<mysql.RowDataPacket[]>('SELECT v FROM fenced_counter WHERE id = 1');
        const read = Number(rows[0]!.v);
        await between();
        await c.query('UPDATE fenced_counter SET v = ?, token = ?, writer = ? WHERE id = 1', [read + 1, token, writer]);
        await c.query('INSERT INTO fenced_log (token, writer, v_read, v_written) VALUES (?, ?, ?, ?)', [token, writer, read, read + 1]);
        await c.query('COMMIT');
        return { result: 'ok', read, wrote: read + 1 };
      } catch (err) {
        await c.query('ROLLBACK').catch(() => undefined);
        return refused(err, resource, token);
      }
    },
    close: () => c.end(),
  };
}

async function redisCounter(socket: string, resource: string): Promise<FencedCounter> {
  const r = new Redis({ path: socket, maxRetriesPerRequest: 1 });
  const keys = redisCounterKeys(resource);
  return {
    async increment(token, writer, between) {
      try {
        await r.eval(FENCE_LUA, 1, keys.fence, String(token));
        const raw = await r.get(keys.data);
        const read = raw === null ? 0 : (JSON.parse(raw) as RedisCounterValue).v;
        await between();
        const value: RedisCounterValue = { v: read + 1, token, writer };
        await r.eval(FENCED_SET_LUA, 2, keys.fence, keys.data, String(token), JSON.stringify(value));
        return { result: 'ok', read, wrote: read + 1 };
      } catch (err) {
        return refused(err, resource, token);
      }
    },
    close: async () => void (await r.quit().catch(() => r.disconnect())),
  };
}
