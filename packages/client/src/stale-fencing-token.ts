// A store's refusal of a stale fencing token, as one typed error whatever the store and its
// driver (docs/client.md "Fencing in your database"). The stores say it with the code
// RLF01: PostgreSQL as the SQLSTATE (deploy/postgres/raftlock-fencing.sql), MySQL/MariaDB
// (deploy/mysql/raftlock-fencing.sql) and Redis (deploy/redis/*.lua) as the start of the
// error's text: `RLF01 stale fencing token 4 (highest 5) for invoice/42`. The SDK imports
// no driver: mapFencingError reads the error objects the usual drivers throw (pg, mysql2,
// mariadb, ioredis, redis) by their shape.
import { RaftlockError } from './errors.js';

/** The code of every store's refusal of a stale fencing token (PostgreSQL's SQLSTATE, the
 *  start of MySQL's MESSAGE_TEXT and of the Redis scripts' error reply). */
export const STALE_FENCING_TOKEN_CODE = 'RLF01';

/**
 * The store refused a write: `token` is lower than a token that another holder of the
 * lock has already written `resource` with. The lock has passed on; stop, and take it
 * again before writing. Nothing of the refused write was done (after MySQL's refusal the
 * transaction is still open: roll it back).
 */
export class StaleFencingTokenError extends RaftlockError {
  /** the fenced resource (for Redis: the fence key), '' when neither the caller nor the store said */
  readonly resource: string;
  readonly token: bigint;
  /** the highest token recorded for the resource, when the store said it */
  readonly highestToken: bigint | undefined;
  constructor(resource: string, token: bigint, highestToken: bigint | undefined, cause: unknown, store = 'PostgreSQL') {
    super(
      'stale_fencing_token',
      `${store} refused the write to "${resource}": fencing token ${token} is stale${highestToken === undefined ? '' : ` (a holder with token ${highestToken} has written)`}`,
      { cause },
    );
    this.name = 'StaleFencingTokenError';
    this.resource = resource;
    this.token = token;
    this.highestToken = highestToken;
  }
}

/** What the caller knows about the refused write; it takes precedence over what the
 *  error's text says (MySQL cuts its message at 128 characters; Redis names the fence key). */
export interface FencingErrorContext {
  resource?: string;
  token?: number | bigint;
}

// MySQL's and Redis's wording. A driver or a query builder may put its own prefix before it
// ("(conn:12, no: 1644, SQLState: 45000) ", "CALL … - "), so it may start after a space.
const REFUSAL = /(?:^|[\s:)])RLF01 stale fencing token (\d+) \(highest (\d+)\)(?: for ([^\n]*))?/;

/**
 * `err` as a StaleFencingTokenError when it is a store's refusal of a stale fencing token
 * (RLF01 from PostgreSQL, MySQL/MariaDB or Redis, through any of their usual drivers, also
 * wrapped as an error's `cause`), else `err` itself, unchanged. For a catch block:
 * `catch (err) { throw mapFencingError(err, { resource, token }) }`.
 */
export function mapFencingError(err: unknown, context: FencingErrorContext = {}): unknown {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof StaleFencingTokenError) return e;
    const found = refusalIn(e as Record<string, unknown>);
    if (found) {
      const resource = context.resource ?? found.resource ?? '';
      const t = context.token;
      const token = typeof t === 'bigint' ? t : typeof t === 'number' && Number.isSafeInteger(t) ? BigInt(t) : (found.token ?? 0n);
      return new StaleFencingTokenError(resource, token, found.highest, err, found.store);
    }
  }
  return err;
}

interface Refusal {
  store: string;
  token: bigint | undefined;
  highest: bigint | undefined;
  resource: string | undefined;
}

function refusalIn(e: Record<string, unknown>): Refusal | undefined {
  const str = (k: string): string | undefined => (typeof e[k] === 'string' ? (e[k] as string) : undefined);
  // pg: the SQLSTATE is the code; DETAIL is `resource=… token=N highest=M`
  if (e.code === STALE_FENCING_TOKEN_CODE) {
    const detail = /^resource=([^]*) token=(\d+) highest=(\d+)$/.exec(str('detail') ?? '');
    const fromMessage = /stale fencing token (\d+)/.exec(str('message') ?? '');
    const token = detail?.[2] ?? fromMessage?.[1];
    return { store: 'PostgreSQL', resource: detail?.[1], token: token === undefined ? undefined : BigInt(token), highest: detail?.[3] === undefined ? undefined : BigInt(detail[3]) };
  }
  // mysql2 keeps the server's text in sqlMessage, the mariadb connector in text; Redis
  // clients (ioredis' ReplyError, node-redis' ErrorReply) in message
  for (const text of [str('sqlMessage'), str('text'), str('message')]) {
    const m = text === undefined ? null : REFUSAL.exec(text);
    if (m) {
      const mysql = e.errno === 1644 || e.sqlState === '45000' || text !== str('message');
      const redis = e.command !== undefined || /^(ReplyError|ErrorReply)$/.test(String(e.name));
      return { store: mysql ? 'MySQL/MariaDB' : redis ? 'Redis' : 'The store', token: BigInt(m[1]!), highest: BigInt(m[2]!), resource: m[3] };
    }
  }
  return undefined;
}
