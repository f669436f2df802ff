// The `clock` fault's machinery (docs/jepsen-lite.md "Faults"): every node runs under
// libfaketime (Debian's `faketime` package, installed by scripts/install-test-deps.sh)
// with a control file per node, so the nemesis changes one node's clock while it runs.
//
// - Rate mode (every node by default): CLOCK_MONOTONIC and CLOCK_REALTIME both follow the
//   control file's rate ("+0 x2": twice as fast), so Node's timers, performance.now() and
//   Date.now() all run fast or slow, as on a machine whose oscillator is off.
//   FAKETIME_XRESET makes a rate change continue from the current fake time instead of
//   rescaling the time since the process started (which jumps by the uptime). The file is
//   read again at most once a second (FAKETIME_CACHE_DURATION), so a change lands within a
//   second. The multi-threaded build (libfaketimeMT) because Node calls the clock from
//   several threads.
// - Wall mode (the step variant): only CLOCK_REALTIME is faked
//   (FAKETIME_DONT_FAKE_MONOTONIC), so "+600" steps the wall clock by ten minutes and the
//   monotonic clock stays real, as an NTP step does. A monotonic clock never steps on a
//   real machine, so rate mode is never used for steps.
//
// Measured with libfaketime 0.9.10: with XRESET, a process that reads only CLOCK_MONOTONIC
// after a rate change sees its monotonic time stall or crawl until something reads
// CLOCK_REALTIME (the reset is done on that path). A node under load does (logging, HTTP
// Date headers), an idle one may not: clock-kick.ts, preloaded into every node, reads the
// wall clock every 50 ms. With it, rate changes are smooth (largest jump 16–35 ms).
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fileURLToPath } from 'node:url';

export type ClockMode = 'rate' | 'wall';

/** libfaketimeMT.so.1, wherever the distribution put it; null: not installed */
export function faketimeLibrary(): string | null {
  const roots = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/usr/local/lib'];
  for (const r of roots) {
    const p = join(r, 'faketime', 'libfaketimeMT.so.1');
    if (existsSync(p)) return p;
  }
  try {
    for (const d of readdirSync('/usr/lib')) {
      const p = join('/usr/lib', d, 'faketime', 'libfaketimeMT.so.1');
      if (existsSync(p)) return p;
    }
  } catch {
    /* no /usr/lib: not Linux */
  }
  return null;
}

const here = fileURLToPath(new URL('.', import.meta.url));
const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** node flags that preload the wall-clock kick (see the header) */
export function clockKickFlags(): string[] {
  return ['--import', pathToFileURL(join(here, `clock-kick${ext}`)).href];
}

/** The fake clocks of a run's nodes: one control file per node id. */
export class FakeClocks {
  private readonly modes = new Map<string, ClockMode>();
  private readonly specs = new Map<string, string>();

  constructor(
    private readonly lib: string,
    private readonly dir: string,
  ) {}

  private file(id: string): string {
    return join(this.dir, `clock-${id}.rc`);
  }

  /** the environment a node starts with: rate mode unless wall mode was asked for this start */
  envFor(id: string, mode: ClockMode = 'rate'): Record<string, string> {
    this.modes.set(id, mode);
    this.set(id, '+0 x1');
    const common = { LD_PRELOAD: this.lib, FAKETIME_TIMESTAMP_FILE: this.file(id), FAKETIME_CACHE_DURATION: '1' };
    return mode === 'rate' ? { ...common, FAKETIME_XRESET: '1' } : { ...common, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
  }

  /** the mode the node's current process was started in */
  mode(id: string): ClockMode | undefined {
    return this.modes.get(id);
  }

  /** write the node's control file: "+0 x2" (rate), "+600" (wall offset in seconds) */
  set(id: string, spec: string): void {
    this.specs.set(id, spec);
    writeFileSync(this.file(id), `${spec}\n`);
  }

  spec(id: string): string {
    return this.specs.get(id) ?? '+0 x1';
  }
}
