// Bytes allocated by function, from a V8 sampling heap profile (bench/http/main.ts
// --alloc-prof-dir, or any .heapprofile):
//   node --import tsx bench/alloc-summary.ts FILE [--requests N] [--top 30]
// Self bytes per function, largest first, as a share of the total and, with --requests,
// per request. A profile sampled with the collected objects included measures what the
// garbage collector has to deal with, not what is still alive.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Node { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children?: Node[] }

const { values, positionals } = parseArgs({ options: { requests: { type: 'string' }, top: { type: 'string', default: '30' } }, allowPositionals: true });
if (positionals.length !== 1) {
  console.error('usage: node --import tsx bench/alloc-summary.ts FILE [--requests N] [--top 30]');
  process.exit(2);
}
const requests = values.requests === undefined ? undefined : Number(values.requests);
const top = Number(values.top);
if ((requests !== undefined && !(requests > 0)) || !(top > 0)) {
  console.error('--requests and --top must be positive numbers');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(positionals[0] as string, 'utf8')) as { head: Node };
const byFunction = new Map<string, number>();
let total = 0;
const stack: Node[] = [profile.head];
while (stack.length > 0) {
  const n = stack.pop() as Node;
  const cf = n.callFrame;
  const where = cf.url.replace(/^.*\/(node_modules|src|bench|dist)\//, '$1/');
  const key = `${cf.functionName || '(anonymous)'}  ${where}${where ? `:${cf.lineNumber + 1}` : ''}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + n.selfSize);
  total += n.selfSize;
  for (const c of n.children ?? []) stack.push(c);
}
console.log(`${(total / 1e6).toFixed(1)} MB sampled${requests ? `, ${(total / requests).toFixed(0)} bytes per request` : ''}`);
for (const [k, v] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%${requests ? `${(v / requests).toFixed(0).padStart(7)} B/req` : ''}  ${k}`);
}
