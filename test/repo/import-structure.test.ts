// The import structure scripts/layers.mjs checks, as part of npm test: lint sees static
// imports only, and nothing else fails on two files that import each other
// (docs/architecture.md#layers).
import { test } from 'node:test';
import assert from 'node:assert/strict';

interface LayersModule {
  crossLayerImports(): { from: string; to: string; allowed: boolean; examples: string[] }[];
  mutualImports(): string[];
  knownMutualPairs: Set<string>;
}

const layers = (): Promise<LayersModule> => import(new URL('../../../scripts/layers.mjs', import.meta.url).href) as Promise<LayersModule>;

test('no import runs against the layer table (dynamic imports included)', async () => {
  const bad = (await layers()).crossLayerImports().filter((e) => !e.allowed);
  assert.deepEqual(bad.flatMap((e) => e.examples), [], 'forbidden imports: see node scripts/layers.mjs');
});

test('no two files import each other, beyond the pairs the table names as known', async () => {
  const { mutualImports, knownMutualPairs } = await layers();
  assert.deepEqual(mutualImports().filter((p) => !knownMutualPairs.has(p)), []);
});

test('every known pair still imports each other (the list only shrinks)', async () => {
  // the known pair is a real one: if it is gone, drop it from knownMutualPairs
  const { mutualImports, knownMutualPairs } = await layers();
  const found = new Set(mutualImports());
  assert.deepEqual([...knownMutualPairs].filter((p) => !found.has(p)), [], 'a known pair no longer imports each other: remove it from knownMutualPairs');
});
