// Worker-thread entry of the sweep runner (sweep.ts): loads the mode's seed module, says
// so, then runs each seed the runner posts with the mode's `runSeed` and answers with its
// outcome. One seed at a time: the runner posts the next only after the answer.
import { parentPort, workerData } from 'node:worker_threads';
import type { SeedOutcome, SweepJob, SweepMessage } from './sweep.js';

const job = workerData as SweepJob;
const post = (m: SweepMessage): void => parentPort!.postMessage(m);
const mode = (await import(job.module)) as { runSeed: (seed: number, args: unknown) => SeedOutcome | Promise<SeedOutcome> };
parentPort!.on('message', (seed: number) => {
  void Promise.resolve(mode.runSeed(seed, job.args)).then((outcome) => post({ seed, outcome }));
});
post({ ready: true });
