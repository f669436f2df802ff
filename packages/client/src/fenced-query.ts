// Fencing where the data lives: a PostgreSQL write that the database itself refuses when
// its fencing token is stale (deploy/postgres/raftlock-fencing.sql, docs/client.md
// "Fencing in your database"). The SDK does not depend on `pg`: it takes any client with
// pg's `query(text, values)` (a pg.Client or a client from pool.connect()), so services
// pass the driver they already have.
import { InvalidRequestError } from './errors.js';
import { mapFencingError, STALE_FENCING_TOKEN_CODE } from './stale-fencing-token.js';

/** SQLSTATE raised by raftlock_fence() for a stale token */
export const STALE_FENCING_TOKEN_SQLSTATE = STALE_FENCING_TOKEN_CODE;

/** What fencedQuery needs of a PostgreSQL client: pg's Client / PoolClient shape. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<unknown>;
}

/** The part of pg's QueryResult that fencedQuery promises (the driver's whole result is returned). */
export interface PgQueryResult<Row> {
  rows: Row[];
  rowCount: number | null;
}

export interface FencedQueryOptions {
  /**
   * 'own' (default): fencedQuery runs BEGIN; SELECT raftlock_fence(…); <sql>; COMMIT, and
   * ROLLBACK when anything fails. 'caller': the client is already inside a transaction the
   * caller opened; fencedQuery runs only the fence and <sql>, and the caller commits (or
   * rolls back — after a StaleFencingTokenError the transaction is aborted and must be).
   */
  transaction?: 'own' | 'caller';
}

/**
 * Runs `sql` with `params` on `client` only if `token` is not stale for `resource`: in one
 * transaction, `SELECT raftlock_fence(resource, token)` and then `sql`. Resolves with
 * `sql`'s result (the driver's; `Row` types its rows, as in pg's `query<Row>()`); rejects with StaleFencingTokenError when PostgreSQL says RLF01 (nothing
 * was written), and with the driver's error otherwise. Needs raftlock-fencing.sql
 * installed in the database. Pass one connection (pg.Client, or pool.connect()'s client),
 * not a pg.Pool: a pool may run each statement on a different connection.
 */
export async function fencedQuery<Row = Record<string, unknown>>(
  client: PgQueryable,
  resource: string,
  token: number | bigint,
  sql: string,
  params: readonly unknown[] = [],
  opts: FencedQueryOptions = {},
): Promise<PgQueryResult<Row>> {
  const tok = checkArgs(client, resource, token, sql, params, opts);
  const own = (opts.transaction ?? 'own') === 'own';
  if (own) await client.query('BEGIN');
  try {
    try {
      await client.query('SELECT raftlock_fence($1::text, $2::bigint)', [resource, tok.toString()]);
    } catch (err) {
      throw mapFencingError(err, { resource, token: tok });
    }
    const result = (await client.query(sql, [...params])) as PgQueryResult<Row>;
    if (own) await client.query('COMMIT');
    return result;
  } catch (err) {
    // A failed rollback (a dead connection) must not hide why we got here.
    if (own) await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

function checkArgs(client: unknown, resource: unknown, token: unknown, sql: unknown, params: unknown, opts: FencedQueryOptions): bigint {
  const bad = (m: string): InvalidRequestError => new InvalidRequestError('invalid_request', `fencedQuery: ${m}`);
  if (typeof client !== 'object' || client === null || typeof (client as { query?: unknown }).query !== 'function') throw bad('client must be a pg-style client with query(text, values)');
  // pg.Pool has these counters, a pg.Client does not: a pool would split the transaction.
  if (typeof (client as { totalCount?: unknown }).totalCount === 'number' && typeof (client as { idleCount?: unknown }).idleCount === 'number') {
    throw bad('pass one connection (await pool.connect()), not a pg.Pool: a pool may run BEGIN, the fence and the write on different connections');
  }
  if (typeof resource !== 'string' || resource.length === 0) throw bad('resource must be a non-empty string');
  if (typeof sql !== 'string' || sql.trim().length === 0) throw bad('sql must be a non-empty string');
  if (!Array.isArray(params)) throw bad('params must be an array');
  if (opts.transaction !== undefined && opts.transaction !== 'own' && opts.transaction !== 'caller') throw bad(`transaction must be 'own' or 'caller', got ${String(opts.transaction)}`);
  let tok: bigint;
  if (typeof token === 'bigint') tok = token;
  else if (typeof token === 'number' && Number.isSafeInteger(token)) tok = BigInt(token);
  else throw bad(`token must be an integer, got ${String(token)}`);
  if (tok < 1n || tok > 9223372036854775807n) throw bad(`token ${tok} is not a positive 64-bit integer (a lock's fencingToken)`);
  return tok;
}
