// Paths of things named like locks (locks, semaphores, elections). Their names may contain
// "/", so one wildcard route per kind takes everything under its base and splits the RAW
// path itself: the last raw segment is the action when it is one of the kind's actions,
// every other segment belongs to the name. A "/" inside a name may be sent raw or as %2F;
// a name whose last segment is itself an action word must encode that slash
// (GET /v1/locks/jobs%2Fcheck reads lock "jobs/check").
import { invalid } from '../errors.js';
import { assertLockName, decodeSegment, lockNameProblem } from '../validate.js';

/** "/v1/locks/a/b%2Fc/acquire?x" under base "/v1/locks/" → { name: "a/b/c", action: "acquire" };
 *  no action word at the end → action "get". `noun` names the kind in messages. */
export function parseNamedPath<A extends string>(rawUrl: string, base: string, actions: ReadonlySet<A>, noun: string): { name: string; action: A | 'get' } {
  const path = rawUrl.split('?', 1)[0] ?? '';
  const rest = path.slice(base.length);
  const segs = rest.split('/');
  let action: A | 'get' = 'get';
  const last = segs[segs.length - 1] as A;
  if (segs.length > 1 && actions.has(last)) {
    segs.pop();
    action = last;
  }
  // Bound the work before decoding: a 256-byte name is at most 768 encoded bytes.
  if (rest.length > 3 * 256 + 16) throw invalid('path.name', `${noun} name is longer than 256 bytes`);
  const name = segs.map((s) => decodeSegment(s, 'path.name')).join('/');
  return { name: assertLockName(name), action };
}

/** a list's or watch's `?prefix=`: '' (everything) or a valid start of a name */
export function namePrefix(prefix: string | undefined): string {
  const p = prefix ?? '';
  if (p !== '') {
    const problem = lockNameProblem(p, 'prefix');
    if (problem) throw invalid('query.prefix', problem);
  }
  return p;
}
