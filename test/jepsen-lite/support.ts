// Shared by the jepsen-lite run tests: a temp run folder removed afterwards (kept with
// RAFTLOCK_KEEP_TEST_DIRS=1, and moved to jepsen-runs/ when the run found a violation or
// was not linearizable), a printed seed (JEPSEN_SEED replays one), and the summary text,
// then the run's log, in every assertion message.
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import { defaultOptions, runJepsen, summaryText, type RunOptions, type RunSummary } from './run.js';
import { freshSeed, seedFromEnv } from '../support/seed.js';

/** `npm test` runs these files beside two other lanes on a 2-core machine
 *  (scripts/run-tests.mjs), where one kill-all recovery took 2.9 s of the 4 s liveness bound
 *  (which has no room for scheduling delay: docs/jepsen-lite.md "Liveness"). The runs in
 *  `npm test` add this much to it; `npm run jepsen` keeps the strict bound. */
export const LOADED_MACHINE_SLACK_MS = 2000;

/** JEPSEN_SEED, else a fresh seed (test/support/seed.ts); runForTest prints it with both ways to replay */
export function testSeed(): number {
  return seedFromEnv('JEPSEN_SEED') ?? freshSeed();
}

/** where a failing run's folder is kept: the checkout's jepsen-runs/ (git-ignored), which
 *  `npm run jepsen` writes to as well */
export const KEPT_RUNS_DIR = fileURLToPath(new URL('../../../jepsen-runs/', import.meta.url));

/** Did the run find something a person should read? Then its folder (history, faults,
 *  node logs, data) must outlive the test: two findings were lost to the cleanup before
 *  (docs/jepsen-lite.md "Open: two findings not reproduced"). */
export function worthKeeping(summary: Pick<RunSummary, 'violations' | 'linearizable'>): boolean {
  return summary.violations.length > 0 || summary.linearizable !== true;
}

/** copy `outDir` into `keptDir` as failed-<its name>; returns the copy's path */
export function keepRunFolder(outDir: string, keptDir: string = KEPT_RUNS_DIR): string {
  mkdirSync(keptDir, { recursive: true });
  const dest = join(keptDir, `failed-${basename(outDir)}`);
  cpSync(outDir, dest, { recursive: true });
  return dest;
}

export async function runForTest(t: TestContext, over: Partial<RunOptions>): Promise<{ summary: RunSummary; text: string }> {
  const outDir = mkdtempSync(join(tmpdir(), 'raftlock-jepsen-'));
  const lines: string[] = [];
  try {
    const strict = defaultOptions({ outDir, log: (l) => lines.push(l), ...over });
    const opts = over.livenessBoundMs === undefined ? { ...strict, livenessBoundMs: strict.livenessBoundMs + LOADED_MACHINE_SLACK_MS } : strict;
    t.diagnostic(`SEED=${opts.seed} (replay: JEPSEN_SEED=${opts.seed}, or ${'npm run jepsen --'} --seed ${opts.seed})`);
    const summary = await runJepsen(opts);
    let text = summaryText(summary);
    if (worthKeeping(summary)) {
      text = `${text.trimEnd()}\nrun folder kept (the test's temp folder is removed): ${keepRunFolder(outDir)}\n`;
    }
    for (const l of lines.filter((x) => /SKIPPING|watch streams/.test(x))) t.diagnostic(l);
    for (const l of text.trim().split('\n')) t.diagnostic(l);
    // the verdict first: a failure is read from its first lines (scripts/run-tests.mjs
    // prints each failed test again at the end, cut short)
    return { summary, text: `${text}\n── the run's log ──\n${lines.join('\n')}` };
  } finally {
    if (!process.env.RAFTLOCK_KEEP_TEST_DIRS) rmSync(outDir, { recursive: true, force: true });
  }
}
