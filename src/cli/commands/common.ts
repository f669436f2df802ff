// What every client command of `raftlock` shares: the connection options (--endpoints,
// --token, --timeout, --json), building the SDK client, printing results, and turning any
// failure into ONE human line on stderr (which endpoint, what failed, what to do) plus a
// documented exit code (docs/client.md "Exit codes"). Commands never let a stack trace out.
import type { Command } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, loadConfig } from '../../config.js';
import {
  CompactedError, DeadlockError, DurationError, IdempotencyKeyReusedError, InvalidRequestError, LimitMismatchError, LockHeldError, SemaphoreFullError, LockLostError, NotHolderError, OutcomeUnknownError, parseDuration,
  PermissionDeniedError, RaftlockClient, RaftlockError, SessionLostError, SessionNotFoundError, UnavailableError,
} from '@raftlock/client';

/** Exit codes of the raftlock command (docs/client.md). `lock` passes CMD's own code through. */
export const EXIT = {
  ok: 0,
  /** lock held by someone else, not the holder, token not current */
  held: 1,
  /** bad flags or arguments, invalid request */
  usage: 2,
  /** no endpoint answered, no leader, outcome unknown, rate-limited */
  unavailable: 3,
  /** the session is gone (expired/closed), or the lock was lost while CMD ran */
  lost: 4,
  /** unauthenticated / permission denied */
  denied: 5,
  /** the server answered something unexpected (a bug) */
  internal: 6,
  /** --idempotency-key was first used for another request (422 idempotency_key_reused): nothing was done */
  keyReused: 7,
} as const;

export const DEFAULT_CONFIG = 'cluster.config.json';

export class UsageError extends Error {}

/** A failure that already carries its exit code and message. */
export class CliExit extends Error {
  constructor(readonly exitCode: number, message: string) {
    super(message);
  }
}

/** --endpoints, else RAFTLOCK_ENDPOINTS, else the API URLs of cluster.config.json */
export function resolveEndpoints(flag: string | undefined, configPath = DEFAULT_CONFIG): string[] {
  const raw = flag ?? process.env.RAFTLOCK_ENDPOINTS;
  if (raw) return raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (existsSync(configPath)) return loadConfig(configPath).nodes.map((n) => n.api);
  throw new UsageError(`no endpoints: pass --endpoints URL,… or set RAFTLOCK_ENDPOINTS (no ${configPath} here)`);
}

export interface ClientFlags {
  endpoints?: string;
  config?: string;
  token?: string;
  caFile?: string;
  timeout: string;
  retryFor: string;
  json?: boolean;
  /** commander's --no-leader-routing: false turns it off */
  leaderRouting?: boolean;
}

/** Adds the connection options every client command takes. */
export function withClientOptions(cmd: Command): Command {
  return cmd
    .option('--endpoints <urls>', 'comma-separated API URLs (default: RAFTLOCK_ENDPOINTS, else the api URLs of cluster.config.json)')
    .option('--config <file>', `cluster file to take endpoints from (default: ${DEFAULT_CONFIG})`)
    .option('--token <token>', 'bearer token when the cluster has auth on (default: RAFTLOCK_TOKEN)')
    .option('--ca-file <file>', 'CA certificate for https:// endpoints (default: RAFTLOCK_CA_FILE)')
    .option('--timeout <duration>', 'give up on one request attempt after this long', '5s')
    .option('--retry-for <duration>', 'keep retrying across endpoints (elections, restarts) this long', '5s')
    .option('--no-leader-routing', 'spread requests over the endpoints instead of sending them to the leader the answers name (docs/client.md "Leader routing"; default: RAFTLOCK_LEADER_ROUTING=off turns it off too)')
    .option('--json', 'print results (and errors, on stdout) as JSON');
}

/** Where and how a client command connects: endpoints, bearer token and CA (flags, then
 *  RAFTLOCK_TOKEN / RAFTLOCK_CA_FILE, then cluster.config.json's API URLs). */
export function connection(f: ClientFlags): { endpoints: string[]; token?: string; ca?: Buffer } {
  const endpoints = resolveEndpoints(f.endpoints, f.config ?? DEFAULT_CONFIG);
  const token = f.token ?? process.env.RAFTLOCK_TOKEN;
  const caFile = f.caFile ?? process.env.RAFTLOCK_CA_FILE;
  let ca: Buffer | undefined;
  if (caFile) {
    try {
      ca = readFileSync(caFile);
    } catch (err) {
      throw new UsageError(`--ca-file ${caFile}: ${(err as Error).message}`);
    }
  }
  return { endpoints, ...(token ? { token } : {}), ...(ca ? { ca } : {}) };
}

export function makeClient(f: ClientFlags): RaftlockClient {
  const { endpoints, token, ca } = connection(f);
  try {
    return new RaftlockClient({
      endpoints,
      timeoutMs: durationFlag(f.timeout, '--timeout', 1),
      retryBudgetMs: durationFlag(f.retryFor, '--retry-for', 1),
      leaderRouting: leaderRouting(f),
      ...(token ? { token } : {}),
      ...(ca ? { tls: { ca } } : {}),
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** --no-leader-routing, else RAFTLOCK_LEADER_ROUTING (on|off), else on */
export function leaderRouting(f: Pick<ClientFlags, 'leaderRouting'>): boolean {
  if (f.leaderRouting === false) return false;
  const env = process.env.RAFTLOCK_LEADER_ROUTING;
  if (env === undefined || env === '' || env === 'on') return true;
  if (env === 'off') return false;
  throw new UsageError(`RAFTLOCK_LEADER_ROUTING: expected on or off, got ${JSON.stringify(env)}`);
}

/** A duration flag ("10s", "500ms") in ms; at least `min`. */
export function durationFlag(v: string, flag: string, min = 0): number {
  const ms = parseDuration(v, flag);
  if (ms < min) throw new DurationError(`${flag}: must be at least ${min} ms, got ${JSON.stringify(v)}`);
  return ms;
}

export function intFlag(v: string, flag: string, min: number, max: number): number {
  if (!/^\d+$/.test(v.trim())) throw new UsageError(`${flag}: expected a whole number, got ${JSON.stringify(v)}`);
  const n = Number(v.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${flag}: must be between ${min} and ${max}, got ${v}`);
  return n;
}

export function printJson(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v)}\n`);
}

/**
 * Runs one client command: builds the client, calls `fn`, closes the client, and maps any
 * failure to a one-line message and an exit code. `fn` returns the exit code (0 normally).
 */
export async function runClientCommand(name: string, f: ClientFlags, fn: (client: RaftlockClient) => Promise<number>): Promise<void> {
  let client: RaftlockClient | undefined;
  try {
    client = makeClient(f);
    process.exitCode = await fn(client);
  } catch (err) {
    process.exitCode = reportError(name, err, f.json === true);
  } finally {
    await client?.close().catch(() => undefined);
  }
}

/** Prints the one-line error (and the JSON error object with --json); returns the exit code. */
export function reportError(name: string, err: unknown, json: boolean): number {
  const { code, line, errorCode } = describeError(err);
  process.stderr.write(`raftlock ${name}: ${line}\n`);
  if (json) {
    const e = err instanceof RaftlockError ? err : undefined;
    printJson({ error: { code: errorCode, message: line, ...(e?.endpoint ? { endpoint: e.endpoint } : {}), ...(err instanceof LockHeldError && err.holder ? { holder: err.holder } : {}), ...(err instanceof LockHeldError && err.blocked ? { blocked: err.blocked } : {}), ...(err instanceof DeadlockError ? { cycle: err.cycle } : {}) } });
  }
  return code;
}

/** exit code, one human line, and a machine code for an error */
export function describeError(err: unknown): { code: number; line: string; errorCode: string } {
  const msg = err instanceof Error ? err.message : String(err);
  if (err instanceof CliExit) return { code: err.exitCode, line: msg, errorCode: 'cli' };
  if (err instanceof UsageError || err instanceof DurationError || err instanceof ConfigError) return { code: EXIT.usage, line: `${msg} (see --help)`, errorCode: 'usage' };
  if (err instanceof LockHeldError && err.leader !== undefined) {
    const who = err.leader === null ? ' (no leader yet: lock-delay, or the name is held as a plain lock)' : ` (leader: session ${err.leader.sessionId}, value ${JSON.stringify(err.leader.value.length > 200 ? `${err.leader.value.slice(0, 200)}…` : err.leader.value)}, token ${err.leader.fencingToken})`;
    return { code: EXIT.held, line: `${msg}${who}; wait with --wait 30s or try again later`, errorCode: err.code };
  }
  if (err instanceof LockHeldError) {
    const who = err.holder ? ` (holder: session ${err.holder.sessionId}${err.holder.owner ? `, owner ${err.holder.owner}` : ''}, token ${err.holder.fencingToken})` : ' (in lock-delay after its holder expired)';
    return { code: EXIT.held, line: `${msg}${who}; wait with --wait 30s or try again later`, errorCode: err.code };
  }
  if (err instanceof DeadlockError) return { code: EXIT.held, line: `${msg}; nothing was changed: release what the session holds and try again, or take the locks together (raftlock lock A B -- CMD)`, errorCode: err.code };
  if (err instanceof SemaphoreFullError) return { code: EXIT.held, line: `${msg}${err.inUse !== undefined && err.limit !== undefined ? ` (${err.inUse} of ${err.limit} permits in use)` : ''}; wait with --wait 30s or try again later`, errorCode: err.code };
  if (err instanceof LimitMismatchError) return { code: EXIT.usage, line: `${msg}; it is busy with --limit ${err.limit ?? '?'}: use that limit (or wait until it is idle)`, errorCode: err.code };
  if (err instanceof NotHolderError) return { code: EXIT.held, line: `${msg}; the lock was released, expired or re-granted — acquire it again`, errorCode: err.code };
  if (err instanceof SessionNotFoundError) return { code: EXIT.lost, line: `${msg}; the session expired or was closed — open a new one`, errorCode: err.code };
  if (err instanceof SessionLostError || err instanceof LockLostError) return { code: EXIT.lost, line: msg, errorCode: err.code };
  if (err instanceof IdempotencyKeyReusedError) {
    const key = err.idempotencyKey !== undefined ? ` ${err.idempotencyKey}` : '';
    return { code: EXIT.keyReused, line: `${msg}; --idempotency-key${key} belongs to an earlier, different command: nothing was done — repeat that command exactly to retry it, or pass a new key (or none) for this one`, errorCode: err.code };
  }
  if (err instanceof OutcomeUnknownError) {
    return { code: EXIT.unavailable, line: `${msg}; run the same command with --idempotency-key ${err.idempotencyKey ?? 'KEY'} to retry safely`, errorCode: err.code };
  }
  if (err instanceof UnavailableError) return { code: EXIT.unavailable, line: `${msg}; check the cluster with \`raftlock status\` and the endpoints (--endpoints / RAFTLOCK_ENDPOINTS)`, errorCode: err.code };
  if (err instanceof CompactedError) return { code: EXIT.usage, line: `${msg}; start without --from-index for the current state`, errorCode: err.code };
  if (err instanceof InvalidRequestError) return { code: EXIT.usage, line: `${msg}; fix the arguments (see --help)`, errorCode: err.code };
  if (err instanceof PermissionDeniedError) return { code: EXIT.denied, line: `${msg}; check --token / RAFTLOCK_TOKEN and its rights`, errorCode: err.code };
  if (err instanceof RaftlockError) return { code: EXIT.internal, line: `${msg}; this looks like a server problem — check the node's log`, errorCode: err.code };
  return { code: EXIT.internal, line: `unexpected failure: ${msg}`, errorCode: 'internal' };
}
