// Seeded randomness, injected into the core (election timeouts) and the simulator.
// sfc32: small, fast, good statistical quality, and trivially reproducible from a seed.

export interface Rng {
  /** uniform in [0, 1) */
  next(): number;
  /** uniform integer in [lo, hi) */
  int(lo: number, hi: number): number;
  /** a child generator whose stream is independent of further draws from this one */
  fork(): Rng;
}

export function seededRng(seed: number): Rng {
  let a = 0x9e3779b9 ^ (seed >>> 0);
  let b = 0x243f6a88 ^ Math.floor(seed / 0x100000000);
  let c = 0xb7e15162;
  let d = 1;
  const next32 = (): number => {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t >>> 0;
  };
  for (let i = 0; i < 15; i++) next32(); // mix the seed in
  const rng: Rng = {
    next: () => next32() / 0x100000000,
    int: (lo, hi) => {
      if (!(hi > lo)) throw new Error(`Rng.int: empty range [${lo}, ${hi})`);
      return lo + Math.floor(rng.next() * (hi - lo));
    },
    fork: () => seededRng(next32() * 0x100000 + (next32() & 0xfffff)),
  };
  return rng;
}
