// msgpack encoding of what goes into the Raft log (lock commands) and into snapshots (the
// lock FSM's exported state plus the member address book). The pure FSM never sees bytes:
// it validates decoded values with parseEnvelope / importState.
import { Packr } from 'msgpackr';
import { parseEnvelope, type Envelope } from '../../lock-fsm/index.js';

// Explicit options: plain maps (no record extension, so the bytes do not depend on what
// this process encoded before: canonical for equal values), no structured clone, and
// Uint8Array round-trips as binary.
const packr = new Packr({ useRecords: false, structuredClone: false, moreTypes: false, mapsAsObjects: true, variableMapSize: true, int64AsType: 'number' });

/** leading byte of every encoded log command, so a future format can coexist */
export const COMMAND_FORMAT_V1 = 1;

/**
 * The envelopes this process encoded, by the bytes it made of them. The leader that
 * proposed an entry applies the very bytes object it proposed (the core and the storage
 * keep entries as they were handed in), so its apply takes the envelope validated here
 * instead of decoding and validating its own bytes a second time (issue 18: ~5 µs per
 * command; docs/lock-fsm.md "The leader's own commands"). What it returns is exactly what
 * decoding returns: the envelope parseEnvelope built, whose fields are validated strings
 * and safe integers, which msgpack round-trips unchanged (command-codec.test.ts checks
 * every command kind). Weak: an entry that left the log takes its envelope with it.
 */
const validated = new WeakMap<Uint8Array, Envelope>();

/** Validates (parseEnvelope: throws InvalidCommandError) and encodes a log command. */
export function encodeCommand(env: Envelope): Uint8Array {
  const valid = parseEnvelope(env);
  const body = packr.pack(valid);
  const out = new Uint8Array(body.length + 1);
  out[0] = COMMAND_FORMAT_V1;
  out.set(body, 1);
  validated.set(out, valid);
  return out;
}

/** Decodes and validates a log command; throws a clear error on anything malformed. The
 *  same bytes object encodeCommand returned gives the envelope it validated. */
export function decodeCommand(bytes: Uint8Array): Envelope {
  return validated.get(bytes) ?? decodeCommandBytes(bytes);
}

/** decodeCommand without the cache of this process's own commands (tests compare the two) */
export function decodeCommandBytes(bytes: Uint8Array): Envelope {
  if (bytes.length < 2) throw new Error(`log command of ${bytes.length} bytes is too short`);
  if (bytes[0] !== COMMAND_FORMAT_V1) throw new Error(`log command format ${bytes[0]} is not known to this version`);
  let value: unknown;
  try {
    value = packr.unpack(bytes.subarray(1));
  } catch (err) {
    throw new Error(`log command is not valid msgpack: ${(err as Error).message}`);
  }
  const env = parseEnvelope(value);
  ownStrings(env, 3);
  return env;
}

/**
 * msgpackr's native string extraction decodes all strings of a message as one string and
 * hands out slices of it; V8 keeps a slice's whole parent alive. The state machine keeps
 * the session ids, lock names and owners of commands for as long as the session or lock
 * lives, so each would pin the decoded text of its whole command: 15 MiB of parents per
 * 100,000 sessions (heap snapshot). Commands are small; copying their strings is cheap.
 */
function ownStrings(o: object, depth: number): void {
  const rec = o as Record<string, unknown>;
  for (const k of Object.keys(rec)) {
    const x = rec[k];
    // V8 makes sliced strings of 13 characters and more only
    if (typeof x === 'string' && x.length >= 13) rec[k] = Buffer.from(x, 'utf8').toString('utf8');
    else if (depth > 1 && typeof x === 'object' && x !== null && !(x instanceof Uint8Array)) ownStrings(x, depth - 1);
  }
}

/**
 * Encode a large value (snapshots) into exactly-sized bytes of its own. msgpackr packs
 * into ONE module-level working buffer shared by every Packr, grows it to fit the largest
 * value it ever packed, keeps it, and hands out views into it: after one 9 MiB snapshot,
 * ~19 MiB stayed pinned on every node for good (heap snapshot, 100,000 sessions). So the
 * result is copied out and msgpackr is handed a fresh small buffer.
 */
export function encodeValue(v: unknown): Uint8Array {
  const out = new Uint8Array(packr.pack(v));
  packr.useBuffer(Buffer.allocUnsafeSlow(8192));
  return out;
}

export function decodeValue(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}
