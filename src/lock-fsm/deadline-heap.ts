// A binary min-heap of deadlines for the lessor: push and pop O(log n). Ties break by
// insertion order, so due() lists commands in a reproducible order.

export interface HeapItem<T> {
  atMs: number;
  seq: number;
  value: T;
}

export class DeadlineHeap<T> {
  private items: HeapItem<T>[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  clear(): void {
    this.items = [];
  }

  push(atMs: number, value: T): void {
    const a = this.items;
    a.push({ atMs, seq: this.seq++, value });
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(a[i] as HeapItem<T>, a[p] as HeapItem<T>)) break;
      swap(a, i, p);
      i = p;
    }
  }

  /** Adds many items at once: append, then heapify bottom-up, O(n) instead of
   *  O(n log n) (a new leader arms a million deadlines in one go). */
  pushAll(items: Iterable<{ atMs: number; value: T }>): void {
    const a = this.items;
    for (const it of items) a.push({ atMs: it.atMs, seq: this.seq++, value: it.value });
    for (let i = (a.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /** earliest deadline, or undefined when empty */
  peekAt(): number | undefined {
    return this.items[0]?.atMs;
  }

  pop(): HeapItem<T> | undefined {
    const a = this.items;
    const top = a[0];
    if (top === undefined) return undefined;
    const last = a.pop() as HeapItem<T>;
    if (a.length > 0) {
      a[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  private siftDown(i: number): void {
    const a = this.items;
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < a.length && less(a[l] as HeapItem<T>, a[m] as HeapItem<T>)) m = l;
      if (r < a.length && less(a[r] as HeapItem<T>, a[m] as HeapItem<T>)) m = r;
      if (m === i) return;
      swap(a, i, m);
      i = m;
    }
  }
}

function less<T>(x: HeapItem<T>, y: HeapItem<T>): boolean {
  return x.atMs < y.atMs || (x.atMs === y.atMs && x.seq < y.seq);
}

function swap<T>(a: T[], i: number, j: number): void {
  const t = a[i] as T;
  a[i] = a[j] as T;
  a[j] = t;
}
