// Summarise V8 .cpuprofile files (node --cpu-prof): top functions by SELF time, and self
// time grouped by where the code lives (our src/ folders, each node_modules package,
// node internals, GC, idle). Used for the profile-first rule (BENCHMARKS.md "Profile (where
// the CPU goes now)"):
//
//   npm run bench -- --node-args "--cpu-prof --cpu-prof-dir=/tmp/prof" …
//   node --import tsx bench/profile-summary.ts /tmp/prof/*.cpuprofile [--top 30] [--last S]
//
// --last S keeps only the samples of the profile's last S seconds (the measured window,
// without start-up: on a loaded machine module compilation is a large share otherwise).
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

function area(url: string, fn: string): string {
  if (fn === '(garbage collector)') return '(gc)';
  if (fn === '(idle)' || fn === '(program)' || fn === '(root)') return fn;
  if (!url) return '(native/builtin)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return `npm:${rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const m = /\/(dist\/)?(src|bench|test)\/(.+)$/.exec(url);
  if (m) {
    const parts = m[3]!.split('/');
    return `${m[2]}/${parts.length > 1 ? parts.slice(0, -1).join('/') : parts[0]}`;
  }
  return url;
}

/** total time (self + callees) of every node named `name`, grouped by its caller chain (`depth` up) */
function printCallers(p: Profile, byId: Map<number, ProfileNode>, selfUs: Map<number, number>, name: string, busy: number, depth: number): void {
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const totalOf = (id: number): number => (selfUs.get(id) ?? 0) + (byId.get(id)!.children ?? []).reduce((s, c) => s + totalOf(c), 0);
  const byChain = new Map<string, number>();
  for (const n of p.nodes) {
    if (n.callFrame.functionName !== name) continue;
    const chain: string[] = [];
    for (let id = parent.get(n.id), k = 0; id !== undefined && k < depth; id = parent.get(id), k++) chain.push(byId.get(id)!.callFrame.functionName || '(anon)');
    const key = chain.join(' < ');
    byChain.set(key, (byChain.get(key) ?? 0) + totalOf(n.id));
  }
  console.log(`-- callers of ${name} (total time incl. callees, % of busy)`);
  for (const [k, v] of [...byChain].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`${((100 * v) / busy).toFixed(2).padStart(6)}%  ${name} < ${k}`);
}

function main(): void {
  const args = process.argv.slice(2);
  const ti = args.indexOf('--top');
  const top = ti >= 0 ? Number(args[ti + 1]) : 30;
  const ci = args.indexOf('--callers');
  const callersOf = ci >= 0 ? args[ci + 1] : undefined;
  const di = args.indexOf('--depth');
  const depth = di >= 0 ? Number(args[di + 1]) : 4;
  const li = args.indexOf('--last');
  const lastS = li >= 0 ? Number(args[li + 1]) : Infinity;
  if (!(lastS > 0)) {
    console.error('--last: expected a positive number of seconds');
    process.exit(2);
  }
  const skip = new Set([ti, ci, di, li].filter((i) => i >= 0).flatMap((i) => [i, i + 1]));
  const files = args.filter((_, i) => !skip.has(i));
  if (files.length === 0) {
    console.error('usage: node --import tsx bench/profile-summary.ts FILE.cpuprofile… [--top N] [--callers NAME [--depth N]] [--last SECONDS]');
    process.exit(2);
  }
  for (const f of files) {
    const p = JSON.parse(readFileSync(f, 'utf8')) as Profile;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const selfUs = new Map<number, number>();
    const from = p.endTime - lastS * 1e6;
    let t = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i] ?? 0;
      if (t < from) continue;
      selfUs.set(p.samples[i]!, (selfUs.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
    }
    const total = p.endTime - Math.max(p.startTime, from);
    const byFn = new Map<string, number>();
    const byArea = new Map<string, number>();
    for (const [id, us] of selfUs) {
      const n = byId.get(id)!;
      const cf = n.callFrame;
      const file = cf.url.replace(/^.*\/(node_modules|src|dist|bench|test)\//, '$1/');
      const key = `${cf.functionName || '(anonymous)'}  ${file}:${cf.lineNumber + 1}`;
      byFn.set(key, (byFn.get(key) ?? 0) + us);
      const a = area(cf.url, cf.functionName);
      byArea.set(a, (byArea.get(a) ?? 0) + us);
    }
    const idle = byArea.get('(idle)') ?? 0;
    const busy = total - idle;
    console.log(`\n== ${f}: ${(total / 1e6).toFixed(1)} s profiled, busy ${(busy / 1e6).toFixed(1)} s (${((100 * busy) / total).toFixed(0)}%)`);
    console.log('-- self time by area (% of busy)');
    for (const [k, v] of [...byArea].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${((100 * v) / busy).toFixed(1).padStart(6)}%  ${k}`);
    if (callersOf !== undefined) printCallers(p, byId, selfUs, callersOf, busy, depth);
    console.log(`-- top ${top} functions by self time (% of busy)`);
    for (const [k, v] of [...byFn].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * v) / busy).toFixed(1).padStart(6)}%  ${k}`);
  }
}

main();
