// An ordered set of strings for `GET /v1/locks?prefix=P&limit=N` over a million held
// locks: a sorted list of sorted chunks (the idea behind Python's sortedcontainers, a
// flat cousin of a B+tree). add/delete cost O(log n + CHUNK) (binary searches plus one
// splice in a chunk of at most CHUNK entries and, rarely, one in the chunk list), and a
// range scan costs O(log n + k). Much smaller than a tree of per-node objects.

import { compareStrings } from './names.js';

const CHUNK = 512;

/** first index i in sorted `a` with a[i] >= x (a.length if none) */
function lowerBound(a: readonly string[], x: string): number {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((a[mid] as string) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SortedStringSet {
  /** invariant: every chunk non-empty and sorted; chunks ordered: last(c[i]) < first(c[i+1]) */
  private chunks: string[][] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** index of the first chunk whose last element is >= x (chunks.length if none) */
  private chunkFor(x: string): number {
    let lo = 0, hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.chunks[mid] as string[];
      if ((c[c.length - 1] as string) < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  has(x: string): boolean {
    const c = this.chunks[this.chunkFor(x)];
    if (c === undefined) return false;
    return c[lowerBound(c, x)] === x;
  }

  /** returns false when x was already present */
  add(x: string): boolean {
    if (this.chunks.length === 0) {
      this.chunks.push([x]);
      this.count = 1;
      return true;
    }
    let ci = this.chunkFor(x);
    if (ci === this.chunks.length) ci--; // larger than everything: append to the last chunk
    const c = this.chunks[ci] as string[];
    const i = lowerBound(c, x);
    if (c[i] === x) return false;
    c.splice(i, 0, x);
    this.count++;
    if (c.length > 2 * CHUNK) this.chunks.splice(ci + 1, 0, c.splice(CHUNK));
    return true;
  }

  /** returns false when x was absent */
  delete(x: string): boolean {
    const ci = this.chunkFor(x);
    const c = this.chunks[ci];
    if (c === undefined) return false;
    const i = lowerBound(c, x);
    if (c[i] !== x) return false;
    c.splice(i, 1);
    this.count--;
    if (c.length === 0) this.chunks.splice(ci, 1);
    else if (c.length < CHUNK / 4) this.maybeMerge(ci);
    return true;
  }

  /** keeps the chunk count O(n / CHUNK) under deletions, so chunkFor stays shallow */
  private maybeMerge(ci: number): void {
    const c = this.chunks[ci] as string[];
    const next = this.chunks[ci + 1];
    if (next !== undefined && c.length + next.length <= 2 * CHUNK) {
      c.push(...next);
      this.chunks.splice(ci + 1, 1);
    }
  }

  /** every element >= from, in ascending order */
  *from(from: string): Generator<string> {
    let ci = this.chunkFor(from);
    if (ci >= this.chunks.length) return;
    let i = lowerBound(this.chunks[ci] as string[], from);
    for (; ci < this.chunks.length; ci++, i = 0) {
      const c = this.chunks[ci] as string[];
      for (; i < c.length; i++) yield c[i] as string;
    }
  }

  /** all elements in ascending order */
  values(): Generator<string> {
    return this.from('');
  }

  /** for tests: fails loudly if the chunk invariants are broken */
  assertValid(): void {
    let prev: string | null = null, n = 0;
    for (const c of this.chunks) {
      if (c.length === 0) throw new Error('SortedStringSet: empty chunk');
      for (const x of c) {
        if (prev !== null && compareStrings(prev, x) >= 0) throw new Error(`SortedStringSet: order broken at ${x}`);
        prev = x;
        n++;
      }
    }
    if (n !== this.count) throw new Error(`SortedStringSet: count ${this.count} != ${n}`);
  }
}
