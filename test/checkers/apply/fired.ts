// The checkers' unit tests: a ModeViolation that throws, so a test can assert which
// checker fired on a fabricated event stream.
import assert from 'node:assert/strict';
import type { ModeViolation } from './mode-checkers.js';

export class Fired extends Error {
  constructor(readonly checker: string, msg: string) {
    super(`${checker}: ${msg}`);
  }
}

export const fail: ModeViolation = (checker, msg) => {
  throw new Fired(checker, msg);
};

export function fires(checker: string, fn: () => void): void {
  assert.throws(fn, (e: unknown) => e instanceof Fired && e.checker === checker);
}
