// Durations as people type them: "500ms", "10s", "1.5m", "2h", or a bare number of
// milliseconds ("500"). One grammar for the SDK, the command line's flags and the cluster
// file (docs/api.md "cluster.config.json", docs/client.md), so a user never learns two
// syntaxes; the server imports it from here (@raftlock/client/duration, a module with no
// imports, so the pure lock state machine may take MAX_DURATION_MS from it too).
// Anything else is an error that quotes the input.

const DURATION_RE = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * The longest duration raftlock takes anywhere: 2^31-1 ms (about 24.8 days), the longest
 * delay a Node.js timer can wait. The log holds ttl, lock-delay and max-hold up to it
 * (docs/api.md: max_hold_ms up to 2147483647), so every value the API accepts can be
 * typed, and deadline arithmetic stays far from 2^53.
 */
export const MAX_DURATION_MS = 2_147_483_647;
/** MAX_DURATION_MS as messages say it */
export const MAX_DURATION_TEXT = `${MAX_DURATION_MS} ms (about 24.8 days)`;

/** why a value is not a duration: not the grammar, not whole milliseconds (or below 0), over MAX_DURATION_MS */
export type DurationProblem = 'syntax' | 'fraction' | 'negative' | 'too_long';

/**
 * The grammar: a string as above, or a number of milliseconds (a cluster file's JSON
 * number). Whole milliseconds from 0 to MAX_DURATION_MS, or the problem.
 */
export function readDuration(v: string | number): { ms: number } | { problem: DurationProblem } {
  let ms: number;
  if (typeof v === 'number') {
    ms = v;
  } else {
    const m = DURATION_RE.exec(v.trim());
    if (!m) return { problem: 'syntax' };
    ms = Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] as number);
  }
  if (ms > MAX_DURATION_MS) return { problem: 'too_long' };
  if (!Number.isInteger(ms)) return { problem: 'fraction' };
  if (ms < 0) return { problem: 'negative' };
  return { ms };
}

export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

/** Parses a duration into whole milliseconds; throws DurationError naming `what`. */
export function parseDuration(text: string, what = 'duration'): number {
  const r = readDuration(text);
  if ('ms' in r) return r.ms;
  const t = JSON.stringify(text);
  switch (r.problem) {
    case 'too_long':
      throw new DurationError(`${what}: ${t} is longer than ${MAX_DURATION_TEXT}`);
    case 'syntax':
      throw new DurationError(`${what}: expected a duration like 500ms, 10s, 1.5m or 1h, got ${t}`);
    default:
      throw new DurationError(`${what}: ${t} is not a whole number of milliseconds`);
  }
}

/** 10000 → "10s", 1500 → "1.5s", 250 → "250ms", 90000 → "1.5m" (for messages). */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${trim(ms / 1000)}s`;
  if (ms < 3_600_000) return `${trim(ms / 60_000)}m`;
  return `${trim(ms / 3_600_000)}h`;
}

function trim(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}
