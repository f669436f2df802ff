// `raftlock watch [--prefix P] [--from-index N] [--json]` and `raftlock observe NAME`
// (docs/client.md "Watching"): follow the cluster's events as they are applied, across node
// failures (the SDK resumes after the last event it printed). Runs until Ctrl-C.
import type { Command } from 'commander';
import type { RaftlockClient, WatchEvent, WatchSynced } from '@raftlock/client';
import { intFlag, runClientCommand, withClientOptions, type ClientFlags } from './common.js';

interface WatchFlags extends ClientFlags {
  prefix?: string;
  fromIndex?: string;
}

const COLUMNS = ['INDEX', 'EVENT', 'KIND', 'NAME', 'SESSION', 'TOKEN', 'DETAIL'] as const;
const WIDTHS = [8, 10, 9, 28, 24, 8, 0];

function cell(v: string, w: number): string {
  return w === 0 ? v : v.length >= w ? `${v.slice(0, w - 1)} ` : v.padEnd(w);
}

/** one table row per event (a "live table": a header once, then a line as each event comes) */
export function formatWatchRow(e: WatchEvent | WatchSynced): string {
  if (e.event === 'synced') return cell(String(e.index), WIDTHS[0]!) + '-- current state above; live events below --';
  const detail = [
    e.mode !== undefined && e.mode !== 'exclusive' ? e.mode : '',
    e.permits !== undefined ? `permits=${e.permits}` : '',
    e.limit !== undefined ? `limit=${e.limit}` : '',
    e.value !== undefined ? `value=${JSON.stringify(e.value)}` : '',
    e.reason !== undefined ? `reason=${e.reason}` : '',
  ].filter(Boolean).join(' ');
  const vals = [String(e.index), e.event, e.kind, e.name, e.session_id ?? '-', e.fencing_token !== undefined ? String(e.fencing_token) : '-', detail];
  return vals.map((v, i) => cell(v, WIDTHS[i]!)).join('').trimEnd();
}

async function untilSignal<T>(client: RaftlockClient, run: (signal: AbortSignal) => AsyncGenerator<T>, each: (x: T) => void): Promise<number> {
  void client;
  const ac = new AbortController();
  const stop = (): void => ac.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    for await (const x of run(ac.signal)) each(x);
    return 0;
  } catch (err) {
    if (ac.signal.aborted) return 0;
    throw err;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

export function registerWatch(program: Command): void {
  withClientOptions(
    program
      .command('watch')
      .description('print lock, semaphore and election events as they are applied (a live table; --json: one JSON object per line)')
      .option('--prefix <prefix>', 'only names starting with this')
      .option('--from-index <n>', 'resume after this log index instead of starting with the current state'),
  ).action(async (f: WatchFlags) =>
    runClientCommand('watch', f, async (client) => {
      const fromIndex = f.fromIndex !== undefined ? intFlag(f.fromIndex, '--from-index', 0, Number.MAX_SAFE_INTEGER) : undefined;
      if (!f.json) console.log(COLUMNS.map((c, i) => cell(c, WIDTHS[i]!)).join('').trimEnd());
      return untilSignal(client, (signal) => client.watch(f.prefix ?? '', { signal, ...(fromIndex !== undefined ? { fromIndex } : {}) }), (e) => {
        console.log(f.json ? JSON.stringify(e) : formatWatchRow(e));
      });
    }),
  );
  withClientOptions(
    program
      .command('observe')
      .description("print an election's leader each time it changes (first the current one; \"-\" when nobody leads)")
      .argument('<name>', 'election name'),
  ).action(async (name: string, f: ClientFlags) =>
    runClientCommand('observe', f, async (client) =>
      untilSignal(client, (signal) => client.observe(name, { signal }), (l) => {
        if (f.json) console.log(JSON.stringify({ name, leader: l }));
        else console.log(l === null ? `${name}: - (no leader)` : `${name}: ${l.value} (session ${l.session_id}, token ${l.fencing_token}, index ${l.index})`);
      }),
    ),
  );
}
