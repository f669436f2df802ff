// One wording for every zod failure raftlock reports: the cluster file, REST bodies and
// queries, tokens.json and a backup's metadata. A failure becomes one line that names the
// field and quotes what was there ("nodes[1].api: expected string, got 5"), so the
// reader can fix it without a stack trace. zod gives the shapes; the wording is ours.
// Parse with `{ reportInput: true }`: the messages quote each issue's input, and without
// it every wrong type would read as a missing field.
import type { z } from 'zod';

/** a value as a message shows it: JSON, cut to 60 characters; `nothing` for undefined */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** ['nodes', 1, 'api'] → "nodes[1].api"; with `root` "body": ['ttl_ms'] → "body.ttl_ms" */
export function formatPath(p: readonly PropertyKey[], root = ''): string {
  let out = root;
  for (const k of p) {
    if (typeof k === 'number') out += `[${k}]`;
    else out += out === '' ? String(k) : `.${String(k)}`;
  }
  return out;
}

const EXPECTED_WORDS: Record<string, string> = { int: 'an integer', tuple: '[min, max]' };

/** One issue as [field, problem]; the field is '' for the value as a whole. */
export function issueLine(iss: z.core.$ZodIssue, root = ''): [string, string] {
  const where = formatPath(iss.path, root);
  switch (iss.code) {
    case 'unrecognized_keys': {
      const key = iss.keys[0] ?? '?';
      return [where ? `${where}.${key}` : key, `unknown field${iss.keys.length > 1 ? ` (also: ${iss.keys.slice(1).join(', ')})` : ''}`];
    }
    case 'invalid_type':
      if (iss.input === undefined) return [where, 'required field is missing'];
      return [where, `expected ${EXPECTED_WORDS[iss.expected] ?? iss.expected}, got ${describeValue(iss.input)}`];
    case 'too_small':
      if (iss.origin === 'array') return [where, `expected at least ${String(iss.minimum)} item(s)`];
      if (iss.origin === 'string') return [where, 'must not be empty'];
      return [where, `must be >= ${String(iss.minimum)}, got ${describeValue(iss.input)}`];
    case 'too_big':
      if (iss.origin === 'array') return [where, `expected at most ${String(iss.maximum)} item(s)`];
      if (iss.origin === 'string') return [where, `must be at most ${String(iss.maximum)} characters`];
      return [where, `must be <= ${String(iss.maximum)}, got ${describeValue(iss.input)}`];
    case 'invalid_value':
      return [where, `expected one of ${iss.values.map((v) => describeValue(v)).join(', ')}, got ${describeValue(iss.input)}`];
    default:
      return [where, iss.message];
  }
}

/**
 * A failed parse as one line, "field: problem", from its first issue. `countMore` adds
 * "(and N more problems)" when there were others (a file, where the reader fixes them all
 * in one go; a request names the first only).
 */
export function zodErrorText(err: z.ZodError, o: { root?: string; countMore?: boolean } = {}): string {
  const first = err.issues[0];
  if (!first) return o.root ? `${o.root}: invalid` : 'invalid';
  const [field, problem] = issueLine(first, o.root);
  const more = err.issues.length - 1;
  const tail = o.countMore && more > 0 ? ` (and ${more} more problem${more > 1 ? 's' : ''})` : '';
  return `${field ? `${field}: ` : ''}${problem}${tail}`;
}
