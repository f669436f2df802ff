// The one assertion module of the Raft core, its storage, the node driver and the lock
// state machine (src/lock-fsm's modules import it through state.ts; the core's index
// re-exports the error classes). A layer of its own (docs/architecture.md#layers), so
// that the core and the FSM share it without depending on each other. An assertion states what
// must hold if the code is right: a failed one is a bug, or state that can no longer be
// trusted, and it throws at once, before anything is written (TigerBeetle's style:
// assert preconditions, postconditions and both sides of paired writes, so a mistake
// stops the node instead of becoming durable). Bad input is NOT asserted: it is checked
// where it enters (RawNode.step for peer messages, message-check.ts; wire-validate.ts,
// the REST schemas) and refused with a clear error.
//
// Each area throws its own class, so a caller or a test can tell a storage invariant from
// a core one; all of them are InvariantErrors, and each sets `name` so that logs and
// stack traces say which one it was.

/** a broken invariant: a bug, never bad input */
export abstract class InvariantError extends Error {}

/** the Raft core (src/raft/core) */
export class RaftAssertionError extends InvariantError {
  override readonly name = 'RaftAssertionError';
}

/** a Storage or DurableStorage implementation (core/storage.ts, the LevelDB store) */
export class StorageAssertionError extends InvariantError {
  override readonly name = 'StorageAssertionError';
}

/** the node driver (the loop around RawNode) */
export class DriverAssertionError extends InvariantError {
  override readonly name = 'DriverAssertionError';
}

/** the lock state machine (src/lock-fsm) */
export class FsmAssertionError extends InvariantError {
  override readonly name = 'FsmAssertionError';
}

/** an invariant of the Raft core */
export function assert(cond: boolean, msg: string): asserts cond {
  if (!cond) throw new RaftAssertionError(`raft invariant broken: ${msg}`);
}

/** an invariant of a storage: its log, snapshot and hard state (durable state) */
export function assertStorage(cond: boolean, msg: string): asserts cond {
  if (!cond) failStorage(msg);
}

/** a storage invariant that is already known to be broken */
export function failStorage(msg: string): never {
  throw new StorageAssertionError(`storage invariant broken: ${msg}`);
}

/** an invariant of the node driver */
export function assertDriver(cond: boolean, msg: string): asserts cond {
  if (!cond) throw new DriverAssertionError(`driver invariant broken: ${msg}`);
}

/** an invariant of the lock state machine */
export function assertFsm(cond: boolean, msg: string): asserts cond {
  if (!cond) throw new FsmAssertionError(`lock-fsm invariant violated: ${msg}`);
}
