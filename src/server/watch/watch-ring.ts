// The bounded window of recent watch events (docs/contract.md §4 "Watch",
// `events_retained`), in log order, with their index and lock name for resumption and
// prefix filtering. An event is kept as its serialized frame, or, while no stream has read
// it, as the item it is made from: `render` serializes it on the first replay that needs
// it (then keeps the frame), so a node nobody watches never formats a frame. Eviction
// takes whole index groups, so a resume point is either complete or refused: `floor` is
// the highest index whose events are no longer (or never were) here, and a resume after N
// is possible iff N >= floor.

export class WatchRing<T extends object = never> {
  private idx: number[] = [];
  private names: string[] = [];
  private frames: (string | T)[] = [];
  /** first live slot of the arrays (evicted slots are dropped lazily, in bulk) */
  private head = 0;
  private floorIndex: number;

  constructor(
    private readonly capacity: number,
    floor = 0,
    private readonly render: (item: T, index: number) => string = () => {
      throw new Error('WatchRing: an unserialized item with no render function');
    },
  ) {
    this.floorIndex = floor;
  }

  get floor(): number {
    return this.floorIndex;
  }

  get size(): number {
    return this.idx.length - this.head;
  }

  /** Forget everything: events up to `floor` are not known (a snapshot replaced the state). */
  reset(floor: number): void {
    this.idx = [];
    this.names = [];
    this.frames = [];
    this.head = 0;
    this.floorIndex = floor;
  }

  /** Appends the events of one entry, as frames or as items to render later. Older groups
   *  go first while there is no room; one group larger than the whole window is still kept
   *  whole. */
  push(index: number, names: readonly string[], frames: readonly (string | T)[]): void {
    while (this.size > 0 && this.size + frames.length > this.capacity) this.evictGroup();
    for (let i = 0; i < frames.length; i++) {
      this.idx.push(index);
      this.names.push(names[i] as string);
      this.frames.push(frames[i] as string | T);
    }
  }

  /** true when every event after `after` is still here */
  covers(after: number): boolean {
    return after >= this.floorIndex;
  }

  /** frames with index > after whose name starts with prefix, in order, concatenated */
  replay(after: number, prefix: string): string {
    let lo = this.head;
    let hi = this.idx.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.idx[mid] as number) <= after) lo = mid + 1;
      else hi = mid;
    }
    let out = '';
    for (let i = lo; i < this.idx.length; i++) if (prefix === '' || (this.names[i] as string).startsWith(prefix)) out += this.frameAt(i);
    return out;
  }

  private frameAt(i: number): string {
    const f = this.frames[i] as string | T;
    if (typeof f === 'string') return f;
    const frame = this.render(f, this.idx[i] as number);
    this.frames[i] = frame;
    return frame;
  }

  private evictGroup(): void {
    const first = this.idx[this.head] as number;
    while (this.head < this.idx.length && this.idx[this.head] === first) this.head++;
    this.floorIndex = first;
    // drop evicted slots in bulk once they are half of the arrays: O(1) amortized
    if (this.head > 1024 && this.head * 2 > this.idx.length) {
      this.idx = this.idx.slice(this.head);
      this.names = this.names.slice(this.head);
      this.frames = this.frames.slice(this.head);
      this.head = 0;
    }
  }
}
