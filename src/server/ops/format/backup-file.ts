// The backup file of `raftlock snapshot save` (docs/operations.md "Backup and restore").
//
//   raftlock-backup v1\n                 magic line: `file` and `head -c 20` tell what it is
//   {…metadata JSON, one line…}\n        readable with `head -n 2`: index, term, counts, sha256
//   <payload bytes>                      the leader's application snapshot (lock FSM + address book)
//   \nsha256 <64 hex>\n                  checksum of every byte before this trailer
//
// Two checksums, for two different questions: payload_sha256 (in the metadata) says the
// payload is the one the leader described; the trailer says nothing in the file — the
// metadata included — changed since the leader wrote it. The index matters for safety (a
// restored cluster's fencing tokens start above it), so the metadata must be covered too.
// Decoding trusts nothing: a truncated, edited or foreign file gets one clear error.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { zodErrorText } from '../../../zod-error.js';

export const BACKUP_MAGIC = 'raftlock-backup v1\n';
const TRAILER_PREFIX = '\nsha256 ';
/** "\nsha256 " + 64 hex + "\n" */
const TRAILER_BYTES = TRAILER_PREFIX.length + 64 + 1;
const MAX_META_BYTES = 1 << 20;

const nodeId = z.string().min(1).max(63);
const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const metaSchema = z.strictObject({
  format: z.literal('raftlock-backup'),
  version: z.literal(1),
  cluster: z.string().max(256),
  created_at: z.string().max(64),
  /** the leader that took it */
  source_node: nodeId,
  /** raftlock package version of the leader */
  raftlock_version: z.string().max(64),
  /** the Raft position the snapshot captures: every entry through `index` applied */
  index: count.min(1),
  term: count.min(1),
  conf: z.strictObject({ voters: z.array(nodeId).max(1000), learners: z.array(nodeId).max(1000) }),
  members: z.array(z.strictObject({ id: nodeId, api: z.string().max(2048), peer: z.string().max(2048) })).max(1000),
  sessions: count,
  locks_held: count,
  waiters: count,
  /** the highest fencing token granted through `index` */
  last_token: count,
  payload_bytes: count,
  payload_sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

export type BackupMeta = z.infer<typeof metaSchema>;
export type BackupMetaInput = Omit<BackupMeta, 'format' | 'version' | 'payload_bytes' | 'payload_sha256'>;

/** A backup file that cannot be trusted; the message says why, in one line. */
export class BackupFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupFormatError';
  }
}

export function sha256Hex(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

export function encodeBackup(m: BackupMetaInput, payload: Uint8Array): Buffer {
  const meta: BackupMeta = { format: 'raftlock-backup', version: 1, ...m, payload_bytes: payload.length, payload_sha256: sha256Hex(payload) };
  // the writer validates too: a bad field is our bug, caught before anyone relies on the file
  const checked = metaSchema.safeParse(meta, { reportInput: true });
  if (!checked.success) throw new Error(`backup metadata invalid: ${zodErrorText(checked.error, { root: 'metadata' })}`);
  const body = Buffer.concat([Buffer.from(BACKUP_MAGIC), Buffer.from(`${JSON.stringify(meta)}\n`), payload]);
  return Buffer.concat([body, Buffer.from(`${TRAILER_PREFIX}${sha256Hex(body)}\n`)]);
}

/** Parse and verify a whole backup file: magic, trailer checksum, metadata, payload size and checksum. */
export function decodeBackup(file: Uint8Array): { meta: BackupMeta; payload: Uint8Array } {
  const buf = Buffer.from(file.buffer, file.byteOffset, file.length);
  if (buf.length < BACKUP_MAGIC.length || buf.subarray(0, BACKUP_MAGIC.length).toString('latin1') !== BACKUP_MAGIC) {
    throw new BackupFormatError(`not a raftlock backup (it does not start with "${BACKUP_MAGIC.trim()}")`);
  }
  if (buf.length < BACKUP_MAGIC.length + TRAILER_BYTES + 2) throw new BackupFormatError(`the file is truncated (${buf.length} bytes)`);
  const trailer = buf.subarray(buf.length - TRAILER_BYTES).toString('latin1');
  const m = /^\nsha256 ([0-9a-f]{64})\n$/.exec(trailer);
  if (!m) throw new BackupFormatError('the checksum trailer is missing: the file is truncated or was changed');
  const body = buf.subarray(0, buf.length - TRAILER_BYTES);
  const actual = sha256Hex(body);
  if (actual !== m[1]) throw new BackupFormatError(`checksum mismatch: the file says sha256 ${m[1]!.slice(0, 16)}…, its content hashes to ${actual.slice(0, 16)}… (damaged or edited)`);
  const metaStart = BACKUP_MAGIC.length;
  const nl = body.indexOf(0x0a, metaStart);
  if (nl < 0 || nl - metaStart > MAX_META_BYTES) throw new BackupFormatError('the metadata line is missing or longer than 1 MiB');
  let raw: unknown;
  try {
    raw = JSON.parse(body.subarray(metaStart, nl).toString('utf8'));
  } catch (err) {
    throw new BackupFormatError(`the metadata is not JSON (${(err as Error).message.slice(0, 80)})`);
  }
  const parsed = metaSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) throw new BackupFormatError(zodErrorText(parsed.error, { root: 'metadata' }));
  const meta = parsed.data;
  const payload = body.subarray(nl + 1);
  if (payload.length !== meta.payload_bytes) throw new BackupFormatError(`payload is ${payload.length} bytes, the metadata says ${meta.payload_bytes}`);
  if (sha256Hex(payload) !== meta.payload_sha256) throw new BackupFormatError('payload checksum does not match the metadata');
  return { meta, payload: new Uint8Array(payload.buffer, payload.byteOffset, payload.length) };
}
