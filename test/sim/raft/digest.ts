// Behaviour fingerprint of the Raft core under the simulator, one line per seed, for
// refactors that must not change behaviour: run it before and after and diff the output.
//   npm run -s sim:digest -- --seed N [--seeds K] [--ticks T]
// Each line is `npm run sim -- --seed N`'s summary line plus a hash of the seed's full
// trace (role changes, partitions, crashes, heal, as --verbose prints them) and of every
// stat the schedule counted (messages, drops, checker counts, ...). Identical output means
// every seed took the same schedule and reached the same outcome.
import { createHash } from 'node:crypto';
import { runSchedule } from './simulate.js';
import { DEFAULT_TICKS } from '../options.js';
import { parseSeedArgs } from '../../support/seed-args.js';

function usage(msg: string): never {
  console.error(`${msg}\nusage: npm run -s sim:digest -- --seed N [--seeds K] [--ticks T]`);
  process.exit(2);
}

const a = parseSeedArgs(process.argv.slice(2), { ticks: DEFAULT_TICKS }, usage, {});
const base = a.seed ?? usage('--seed is required');
for (let seed = base; seed < base + a.seeds; seed++) {
  const trace = createHash('sha256');
  const r = runSchedule(seed, { ticks: a.ticks, onTrace: (line) => trace.update(`${line}\n`) });
  const s = r.stats;
  const stats = createHash('sha256').update(JSON.stringify(Object.keys(s).sort().map((k) => [k, s[k]]))).digest('hex').slice(0, 16);
  const outcome = r.ok ? 'ok' : `FAILED ${r.failure!.kind} at ${r.failure!.phase} tick ${r.failure!.tick}: ${r.failure!.message.split('\n')[0]}`;
  console.log(`SEED=${seed} ${outcome}: ${r.ticks} ticks, ${s['committed']} committed, ${s['leaders']} leader elections, ${s['crashes']} crashes, ` +
    `${s['readsServed']} reads served, ${s['compactions']} compactions, ${s['joins']} joins, ${s['removals']} removals, ` +
    `trace ${trace.digest('hex').slice(0, 16)}, stats ${stats}`);
}
