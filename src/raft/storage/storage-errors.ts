// The errors LevelStorage reports. Each message is ONE line that an operator can act on
// without reading a stack trace: the driver prints it and exits (fail-stop).

/** What an operator should do when a node's log cannot be trusted: the node must come
 *  back as a NEW member, never as the voter it was (it would vote and acknowledge with
 *  forgotten state; docs/membership.md, "A node whose data directory is gone"). */
export const WIPE_ADVICE = 'remove this node from the cluster (raftlock member remove), wipe its data directory, then start it with raftlock serve --join: it receives a snapshot from the leader (docs/recovery.md "A damaged data directory")';

export abstract class StorageError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(oneLine(message), options);
    this.name = new.target.name;
  }
}

/** The data on disk is damaged or inconsistent: open refuses to serve it. `index` names
 *  the log index concerned, when there is one. */
export class StorageCorruptionError extends StorageError {
  readonly code = 'storage_corrupt';
  constructor(
    readonly dir: string,
    readonly what: string,
    readonly index?: number,
    options?: { cause?: unknown },
  ) {
    super(`corrupt log in ${dir}: ${what} (${WIPE_ADVICE})`, options);
  }
}

/** The directory was written by a storage format this code does not understand. Not
 *  corruption: an operator ran an older binary on newer data (or the other way round). */
export class StorageVersionError extends StorageError {
  readonly code = 'storage_version';
  constructor(
    readonly dir: string,
    readonly found: unknown,
    readonly supported: number,
  ) {
    super(`unsupported storage format version ${JSON.stringify(found)} in ${dir}: this raftlock reads version ${supported} only (run the raftlock release that wrote it)`);
  }
}

/** Another process (or another LevelStorage in this one) has the directory open. */
export class StorageLockedError extends StorageError {
  readonly code = 'storage_locked';
  constructor(
    readonly dir: string,
    options?: { cause?: unknown },
  ) {
    super(`data directory ${dir} is in use by another raftlock process (LevelDB lock): stop that process or pick another --data-dir`, options);
  }
}

/** The disk failed a write or an fsync (full disk, I/O error, closed database). The node
 *  must stop: retrying could acknowledge a write that never reached the disk. */
export class StorageFailure extends StorageError {
  readonly code = 'storage_failure';
  constructor(
    readonly dir: string,
    readonly operation: string,
    cause: unknown,
  ) {
    super(`storage failure in ${dir} during ${operation}: ${describeCause(cause)} (the node must stop; check the disk, free space and permissions, then restart)`, { cause });
  }
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    // level wraps the native error; the useful text (e.g. "IO error: ... No space left
    // on device") is usually in the innermost cause
    const inner = cause.cause instanceof Error ? `: ${cause.cause.message}` : '';
    const code = (cause as { code?: unknown }).code;
    return `${typeof code === 'string' ? `${code} ` : ''}${cause.message}${inner}`;
  }
  return String(cause);
}

function oneLine(s: string): string {
  return s.replace(/\s*[\r\n]+\s*/g, ' ');
}
