// `raftlock lock NAME -- CMD ARGS…` (like `etcdctl lock`, `consul lock`): take the lock,
// run CMD while a session keeps it alive, release it when CMD exits, exit with CMD's code.
// `raftlock lock NAME1 NAME2 … -- CMD` takes every name together, as one lock set
// (docs/contract.md §5: all or none, never a deadlock between two such commands).
//
// CMD gets RAFTLOCK_FENCING_TOKEN, RAFTLOCK_SESSION_ID and RAFTLOCK_LOCK in its environment
// (with several names: RAFTLOCK_LOCKS, and RAFTLOCK_LOCK_<i> / RAFTLOCK_FENCING_TOKEN_<i>
// for the i-th name, 1-based: setEnv below) and should hand the token to every resource it
// writes. SIGINT/SIGTERM/SIGHUP/SIGQUIT sent
// to raftlock are forwarded to CMD. If the lock can no longer be proven held (the SDK's
// lease proof runs out, BEFORE the server could expire the session), CMD gets SIGTERM at
// once and SIGKILL after --kill-grace, and raftlock exits 4 — the complaint this answers is
// "my cron job kept running after its lock expired". Only CMD's own process is signalled:
// a CMD that forks (sh -c '…') should `exec` its last command or pass signals on.
import type { Command } from 'commander';
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { constants } from 'node:os';
import type { Lock, LockSet, RaftlockClient, Session } from '@raftlock/client';
import { formatDuration } from '@raftlock/client';
import { durationFlag, EXIT, makeClient, reportError, withClientOptions, type ClientFlags } from './common.js';

interface Flags extends HoldFlags {
  /** --shared: a shared (read) lock */
  shared?: boolean;
}

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];

export function registerLock(program: Command): void {
  withClientOptions(
    holdOptions(program
      .command('lock')
      .description("hold a lock while a command runs; exits with the command's code (4 if the lock was lost)")
      .argument('<name>', 'lock name (several names before -- take them together, all or none)')
      .argument('<command...>', 'the command and its arguments, after --'), 'lock',
  )
      .option('--shared', 'take it shared (a read lock): other shared holders may hold it too')
      .addHelpText('after', '\nExamples:\n  raftlock lock nightly-report --ttl 30s -- ./report.sh --date today\n  raftlock lock accounts/1 accounts/2 -- ./transfer.sh 1 2 100\n\nThe command sees RAFTLOCK_FENCING_TOKEN, RAFTLOCK_SESSION_ID and RAFTLOCK_LOCK; with several\nnames, RAFTLOCK_LOCKS (the names, space-separated) and RAFTLOCK_LOCK_1, RAFTLOCK_FENCING_TOKEN_1,\nRAFTLOCK_LOCK_2, RAFTLOCK_FENCING_TOKEN_2, … in the order given.'),
  ).action(async (name: string, command: string[], f: Flags, cmd: Command) => {
    // Everything after `--` is the command; the operands before it are the names.
    const raw = rawArgsOf(cmd);
    const dash = raw.indexOf('--');
    const operands = [name, ...command];
    const after = dash < 0 ? command.length : raw.length - dash - 1;
    const names = operands.slice(0, Math.max(1, operands.length - after));
    const run = operands.slice(names.length);
    process.exitCode = names.length === 1 ? await runLock(name, run, f) : await runLocks(names, run, f);
  });
}

/** the arguments the program was given (commander keeps them on the root command) */
function rawArgsOf(cmd: Command): string[] {
  let c: Command | null = cmd;
  while (c.parent) c = c.parent;
  return (c as unknown as { rawArgs?: string[] }).rawArgs ?? [];
}

/** `raftlock lock A B … -- CMD`: every name together (session.lockAll), one token per name. */
export async function runLocks(names: string[], command: string[], f: Flags): Promise<number> {
  let maxHold: { maxHoldMs?: number };
  try {
    maxHold = maxHoldFlag(f.maxHold);
  } catch (err) {
    return reportError('lock', err, f.json === true);
  }
  return holdWhileRunning<Held & { set: LockSet }>('lock', names.join(', '), command, f, async (session, o) => {
    const set = await session.lockAll(names, { waitMs: o.waitMs, owner: o.owner, signal: o.signal, ...(f.shared === true ? { mode: 'shared' as const } : {}), ...maxHold });
    const first = set.locks[0] as Lock;
    return { name: names.join(', '), fencingToken: first.fencingToken, sessionId: set.sessionId, signal: set.signal, label: `the lock set ${names.join(', ')}`, set };
  }, undefined, undefined, (held) => setEnv(held.set));
}

/** docs/client.md "raftlock lock": the variables of a command that holds several locks */
export function setEnv(set: LockSet): Record<string, string> {
  const env: Record<string, string> = { RAFTLOCK_SESSION_ID: set.sessionId, RAFTLOCK_LOCKS: set.locks.map((l) => l.name).join(' ') };
  set.locks.forEach((l, i) => {
    env[`RAFTLOCK_LOCK_${i + 1}`] = l.name;
    env[`RAFTLOCK_FENCING_TOKEN_${i + 1}`] = String(l.fencingToken);
  });
  return env;
}

/** what a "hold while CMD runs" command holds: a grant, or a lock set seen as one */
export interface Held {
  name: string;
  fencingToken: number;
  sessionId: string;
  signal: AbortSignal;
  /** how messages name it (default: "NAME (fencing token N)") */
  label?: string;
}

export async function runLock(name: string, command: string[], f: Flags): Promise<number> {
  let maxHold: { maxHoldMs?: number };
  try {
    maxHold = maxHoldFlag(f.maxHold);
  } catch (err) {
    return reportError('lock', err, f.json === true);
  }
  return holdWhileRunning('lock', name, command, f, (session, o) =>
    session.lock(name, { waitMs: o.waitMs, owner: o.owner, signal: o.signal, ...(f.shared === true ? { mode: 'shared' as const } : {}), ...maxHold }));
}

/** --max-hold D (docs/contract.md §4 "Revocation and maximum hold"): 100 ms or more */
export function maxHoldFlag(v: string | undefined): { maxHoldMs?: number } {
  return v === undefined ? {} : { maxHoldMs: durationFlag(v, '--max-hold', 100) };
}

/** The options of every "hold while CMD runs" command (lock, semaphore, elect). */
export function holdOptions(cmd: Command, what: 'lock' | 'semaphore' | 'leadership'): Command {
  return cmd
    .option('--ttl <duration>', `session ttl: how long the ${what} survives if raftlock dies`, '10s')
    .option('--wait <duration>', `how long to wait for the ${what} before giving up (exit 1)`, '30s')
    .option('--owner <text>', 'who holds it, shown by get/ls (default: host:pid)')
    .option('--kill-grace <duration>', `after the ${what} is lost: time between SIGTERM and SIGKILL`, '10s')
    .option('--max-hold <duration>', `the server frees the ${what} this long after granting it, even while raftlock keeps the session alive (CMD is stopped first, as on any loss)`);
}

/** The flags every "hold while CMD runs" command has (lock, semaphore, elect). */
export interface HoldFlags extends ClientFlags {
  ttl: string;
  wait: string;
  owner?: string;
  killGrace: string;
  /** --max-hold */
  maxHold?: string;
}

/**
 * `raftlock lock`, `raftlock semaphore` and `raftlock elect`: open a session, `take` the
 * grant in it (Ctrl-C while waiting gives up cleanly, 130), run CMD while it is held, then
 * `giveUp` the grant if given (elect resigns, so the next candidate leads at once and
 * watchers see `resigned`), close the session (which releases whatever is left in one
 * committed command) and return CMD's exit code.
 */
export async function holdWhileRunning<L extends Held = Lock>(
  what: 'lock' | 'semaphore' | 'elect', name: string, command: string[], f: HoldFlags,
  take: (session: Session, o: { waitMs: number; owner: string; signal: AbortSignal }) => Promise<L>,
  extraEnv: (lock: L) => Record<string, string> = () => ({}),
  giveUp?: (lock: L) => Promise<void>,
  /** the command's variables (default: RAFTLOCK_FENCING_TOKEN, RAFTLOCK_SESSION_ID, and RAFTLOCK_LOCK for a lock) */
  baseEnv: (lock: L) => Record<string, string> = (lock) => ({ RAFTLOCK_FENCING_TOKEN: String(lock.fencingToken), RAFTLOCK_SESSION_ID: lock.sessionId, ...(what === 'lock' ? { RAFTLOCK_LOCK: lock.name } : {}) }),
): Promise<number> {
  let client: RaftlockClient | undefined;
  let session: Session | undefined;
  let held: L | undefined;
  try {
    const ttlMs = durationFlag(f.ttl, '--ttl', 1);
    const waitMs = durationFlag(f.wait, '--wait');
    const graceMs = durationFlag(f.killGrace, '--kill-grace');
    client = makeClient(f);
    const got = await acquire(what, client, name, { ttlMs, waitMs, owner: f.owner ?? `${hostname()}:${process.pid}` }, take);
    if (typeof got === 'number') return got;
    session = got.session;
    held = got.lock;
    return await runWhileHeld(what, got.lock, command, graceMs, { ...baseEnv(got.lock), ...extraEnv(got.lock) });
  } catch (err) {
    return reportError(what, err, f.json === true);
  } finally {
    // CMD has ended (or never ran) before the grant is given up: a successor never runs
    // beside it. A grant already lost gives up nothing (resign of a lost leadership is a no-op).
    if (held && giveUp) {
      await giveUp(held).catch((err: unknown) =>
        process.stderr.write(`raftlock ${what}: could not give up ${name} (${(err as Error).message}); closing the session frees it\n`),
      );
    }
    if (session) {
      // Closing the session releases the grant in one committed command.
      await session.close().catch((err: unknown) =>
        process.stderr.write(`raftlock ${what}: could not release ${name} (${(err as Error).message}); it frees itself when the session's ttl runs out\n`),
      );
    }
    await client?.close().catch(() => undefined);
  }
}

/** Opens the session and waits for the grant; Ctrl-C while waiting gives up cleanly (130). */
async function acquire<L extends Held>(
  what: string, client: RaftlockClient, name: string, o: { ttlMs: number; waitMs: number; owner: string },
  take: (session: Session, o: { waitMs: number; owner: string; signal: AbortSignal }) => Promise<L>,
): Promise<{ session: Session; lock: L } | number> {
  const ac = new AbortController();
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals): void => {
    signalled = sig;
    ac.abort(new Error(`interrupted by ${sig}`));
  };
  for (const s of FORWARDED) process.on(s, onSignal);
  let session: Session | undefined;
  try {
    session = await client.session({ ttlMs: o.ttlMs, owner: o.owner, signal: ac.signal });
    const lock = await take(session, { waitMs: o.waitMs, owner: o.owner, signal: ac.signal });
    return { session, lock };
  } catch (err) {
    await session?.close().catch(() => undefined);
    if (signalled) {
      process.stderr.write(`raftlock ${what}: interrupted by ${signalled} while waiting for ${name}; nothing was run\n`);
      return 128 + (constants.signals[signalled] ?? 0);
    }
    throw err;
  } finally {
    for (const s of FORWARDED) process.off(s, onSignal);
  }
}

/** Runs CMD; resolves with the exit code raftlock should return. */
function runWhileHeld(what: string, lock: Held, command: string[], graceMs: number, vars: Record<string, string>): Promise<number> {
  const [file, ...args] = command;
  if (file === undefined) return Promise.resolve(EXIT.usage);
  const env = { ...process.env, ...vars };
  return new Promise<number>((resolve) => {
    let lost = false;
    let killTimer: NodeJS.Timeout | undefined;
    const child = spawn(file, args, { stdio: 'inherit', env });
    const forward = (sig: NodeJS.Signals): void => {
      child.kill(sig);
    };
    const onLost = (): void => {
      lost = true;
      const why = lock.signal.reason instanceof Error ? lock.signal.reason.message : 'the lock can no longer be proven held';
      process.stderr.write(`raftlock ${what}: LOST ${lock.label ?? `${lock.name} (fencing token ${lock.fencingToken})`}: ${why}; sending SIGTERM to ${file} (pid ${child.pid ?? '?'}), SIGKILL in ${formatDuration(graceMs)}\n`);
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    };
    for (const s of FORWARDED) process.on(s, forward);
    if (lock.signal.aborted) queueMicrotask(onLost);
    else lock.signal.addEventListener('abort', onLost, { once: true });
    const finish = (code: number): void => {
      if (killTimer) clearTimeout(killTimer);
      for (const s of FORWARDED) process.off(s, forward);
      lock.signal.removeEventListener('abort', onLost);
      resolve(code);
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      // spawn failed: the shell's conventions, 127 not found, 126 not executable
      const code = err.code === 'ENOENT' ? 127 : 126;
      process.stderr.write(`raftlock ${what}: cannot run ${file}: ${err.message}\n`);
      finish(code);
    });
    child.once('exit', (code, signal) => {
      if (lost) {
        process.stderr.write(`raftlock ${what}: ${file} stopped (${signal ?? `exit ${code}`}) after the ${what} was lost; exiting ${EXIT.lost}\n`);
        return finish(EXIT.lost);
      }
      finish(code ?? 128 + (signal ? constants.signals[signal] ?? 0 : 0));
    });
  });
}
