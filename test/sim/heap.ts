// A binary min-heap ordered by (key, seq): seq breaks ties in insertion order, so two
// packets due at the same tick leave in the order they were sent unless the network chose
// otherwise. Deterministic by construction: no comparison depends on object identity.

export interface Keyed {
  key: number;
  seq: number;
}

const less = (a: Keyed, b: Keyed): boolean => a.key < b.key || (a.key === b.key && a.seq < b.seq);

export class MinHeap<T extends Keyed> {
  private items: T[] = [];

  get size(): number {
    return this.items.length;
  }
  peek(): T | undefined {
    return this.items[0];
  }
  push(x: T): void {
    const a = this.items;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }
  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    a[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < a.length && less(a[l]!, a[m]!)) m = l;
      if (r < a.length && less(a[r]!, a[m]!)) m = r;
      if (m === i) break;
      [a[i], a[m]] = [a[m]!, a[i]!];
      i = m;
    }
    return top;
  }
}
