// Largest and smallest of a list without spreading it into Math.max/Math.min: a spread
// passes every element as an argument on the stack, and a 30-minute jepsen-lite history
// (hundreds of thousands of operations) overflows it ("Maximum call stack size exceeded",
// docs/jepsen-lite.md "The default mix, 30 minutes").

/** the largest of `xs`, or `floor` when it is larger or `xs` is empty */
export function maxOf(xs: Iterable<number>, floor = -Infinity): number {
  let m = floor;
  for (const x of xs) if (x > m) m = x;
  return m;
}

/** the smallest of `xs`, or `ceiling` when it is smaller or `xs` is empty */
export function minOf(xs: Iterable<number>, ceiling = Infinity): number {
  let m = ceiling;
  for (const x of xs) if (x < m) m = x;
  return m;
}
