// Durations as people type them: "500ms", "10s", "1.5m", "2h", or a bare number of
// milliseconds. The same spellings the cluster file accepts (docs/api.md), so a user
// never learns two syntaxes. Anything else is an error that quotes the input.

const DURATION_RE = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
/** Longer than any TTL or wait the contract allows; keeps the arithmetic exact. */
export const MAX_DURATION_MS = 86_400_000;

export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

/** Parses a duration into whole milliseconds; throws DurationError naming `what`. */
export function parseDuration(text: string, what = 'duration'): number {
  const m = DURATION_RE.exec(text.trim());
  if (!m) throw new DurationError(`${what}: expected a duration like 500ms, 10s, 1.5m or 1h, got ${JSON.stringify(text)}`);
  const ms = Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] as number);
  if (!Number.isInteger(ms)) throw new DurationError(`${what}: ${JSON.stringify(text)} is not a whole number of milliseconds`);
  if (ms > MAX_DURATION_MS) throw new DurationError(`${what}: ${JSON.stringify(text)} is longer than 24h`);
  return ms;
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
