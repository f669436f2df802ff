// The packages as a service gets them: `npm pack` of raftlock and of @raftlock/client
// (from the dist/ that `npm test` has just built), installed from the tarballs into two
// empty applications in a temp dir — one with both, one with the lean client alone — then
// imported (JavaScript, and TypeScript through the exports' `types`), used to take a lock
// on a cluster the test harness started, and `npx raftlock --help` / `npx raftlock cluster`
// run from the installed bin. The lean application's installed tree must hold none of the
// server's dependencies. Everything made here is removed in `after`, also on failure.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ClusterHarness, eventually, freePort, repoRoot } from '../support/cluster-harness.js';

const run = promisify(execFile);
const SERVER_DEPS = ['fastify', 'level', 'classic-level', 'msgpackr', 'prom-client', 'pino'];

/** the environment for a child npm: without the npm_* variables of the `npm test` running us
 *  (they would point the child at this repository's package and workspaces) */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.toLowerCase().startsWith('npm_') || k === 'npm_config_cache' || k === 'npm_config_userconfig') env[k] = v;
  }
  return { ...env, NO_UPDATE_NOTIFIER: '1' };
}

async function npm(args: string[], cwd: string): Promise<string> {
  try {
    return (await run('npm', args, { cwd, env: npmEnv(), timeout: 120_000, maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`npm ${args.join(' ')} (in ${cwd}) failed: ${e.message}\n${e.stderr ?? ''}`);
  }
}

interface Packed {
  filename: string;
  files: { path: string }[];
}

/** Both tarballs from one npm (--ignore-scripts: dist/ is built already, and prepack's
 *  rebuild would take minutes). */
async function packBoth(dest: string): Promise<{ raftlock: Packed; client: Packed }> {
  const out = await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', dest, '--workspaces', '--include-workspace-root'], repoRoot);
  const all = JSON.parse(out.slice(out.indexOf('['))) as (Packed & { name: string })[];
  const raftlock = all.find((p) => p.name === 'raftlock');
  const client = all.find((p) => p.name === '@raftlock/client');
  assert.ok(raftlock && client, `npm pack gave ${all.map((p) => p.name).join(', ')}`);
  return { raftlock, client };
}

/** a promise's outcome, to await later without an unhandled rejection meanwhile */
function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));
}

/** every package name under node_modules (nested and scoped too) */
function installedPackages(dir: string): string[] {
  const out: string[] = [];
  const walk = (nm: string): void => {
    if (!existsSync(nm)) return;
    for (const name of readdirSync(nm)) {
      if (name.startsWith('.')) continue;
      const dirs = name.startsWith('@') ? readdirSync(join(nm, name)).map((s) => `${name}/${s}`) : [name];
      for (const d of dirs) {
        out.push(d);
        walk(join(nm, d, 'node_modules'));
      }
    }
  };
  walk(join(dir, 'node_modules'));
  return out;
}

function app(dir: string, name: string): string {
  const d = join(dir, name);
  mkdirSync(d);
  writeFileSync(join(d, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type: 'module' }));
  return d;
}

/** a script that takes a lock through the installed package and prints its token */
const LOCK_SCRIPT = (pkg: string): string => `
import { RaftlockClient, fencedQuery, StaleFencingTokenError, mapFencingError, FENCE_LUA, FENCED_SET_LUA } from '${pkg}';
if (typeof fencedQuery !== 'function' || typeof StaleFencingTokenError !== 'function') throw new Error('fencedQuery missing');
if (typeof mapFencingError !== 'function' || !FENCE_LUA.includes('RLF01') || !FENCED_SET_LUA.includes('RLF01')) throw new Error('the MySQL/Redis fencing helpers are missing');
const client = new RaftlockClient({ endpoints: process.argv[2] });
try {
  const token = await client.withLock('packaging/${pkg.replace(/[^A-Za-z0-9]/g, '-')}', async ({ fencingToken }) => fencingToken, { ttlMs: 5000, waitMs: 10000 });
  console.log('token=' + token);
} finally {
  await client.close();
}
`;

describe('packages installed from their tarballs (npm pack → npm install)', () => {
  let dir: string;
  let full: string;
  let lean: string;
  let h: ClusterHarness | undefined;
  let raftlockTgz: Packed;
  let clientTgz: Packed;
  const running = new Set<ChildProcess>();
  let typeCheck: Promise<{ ok: true; value: void } | { ok: false; error: unknown }>;
  let installedCluster: Promise<{ ok: true; value: { api: string; stop(): Promise<void> } } | { ok: false; error: unknown }>;

  /** tsc on a file importing each package, as an application's TypeScript would (NodeNext) */
  async function typeCheckBoth(): Promise<void> {
    const src = (pkg: string): string => `import { RaftlockClient, fencedQuery, StaleFencingTokenError, type Grant } from '${pkg}';\nconst c: RaftlockClient = new RaftlockClient({ endpoints: 'http://127.0.0.1:1' });\nconst g: Grant | undefined = undefined;\nvoid [c, g, fencedQuery, StaleFencingTokenError];\n// @ts-expect-error the SDK's types are real: a wrong option is an error\nnew RaftlockClient({ endpoint: 'x' });\n`;
    const tsc = createRequire(join(repoRoot, 'package.json')).resolve('typescript/bin/tsc');
    writeFileSync(join(full, 'check.ts'), src('raftlock'));
    writeFileSync(join(lean, 'check.ts'), src('@raftlock/client'));
    // one program for both files (each resolves from its own application's node_modules);
    // skipLibCheck: the packages' declarations are resolved and used, not re-checked
    const opts = ['--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', '--typeRoots', join(repoRoot, 'node_modules', '@types')];
    try {
      await run(process.execPath, [tsc, ...opts, join(full, 'check.ts'), join(lean, 'check.ts')], { cwd: dir, timeout: 90_000 });
    } catch (err) {
      throw new Error(`tsc: ${(err as { stdout?: string }).stdout ?? String(err)}`);
    }
  }

  /** `npx raftlock cluster` in the full application, with a one-node cluster file there */
  async function startInstalledCluster(): Promise<{ api: string; stop(): Promise<void> }> {
    const api = `http://127.0.0.1:${await freePort()}`;
    const config = { cluster: 'pack', nodes: [{ id: 'n1', api, peer: `http://127.0.0.1:${await freePort()}` }], data_dir: './data', election_timeout_ms: [300, 600], heartbeat_ms: 50 };
    writeFileSync(join(full, 'cluster.config.json'), JSON.stringify(config));
    const p = spawn('npx', ['--no-install', 'raftlock', 'cluster', '--log-level', 'warn'], { cwd: full, env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running.add(p);
    let out = '';
    p.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    p.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    const stop = async (): Promise<void> => {
      if (p.exitCode !== null || p.signalCode !== null) return;
      process.kill(-p.pid!, 'SIGINT'); // Ctrl-C to the group: the command stops its nodes
      const timer = setTimeout(() => process.kill(-p.pid!, 'SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      running.delete(p);
    };
    await eventually(async () => (await fetch(`${api}/v1/cluster`)).ok, 45_000, `the installed \`raftlock cluster\` to answer on ${api} (output: ${out})`);
    return { api, stop };
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'raftlock-pack-'));
    full = app(dir, 'full-app');
    lean = app(dir, 'lean-app');
    // The cluster starts while npm packs and installs.
    const cluster = (async () => {
      h = await ClusterHarness.create({ nodes: 1 });
      h.startAll();
      await h.waitForLeader();
    })();
    const t0 = Date.now();
    ({ raftlock: raftlockTgz, client: clientTgz } = await packBoth(dir));
    const t1 = Date.now();
    const flags = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock'];
    await Promise.all([
      npm([...flags, join(dir, clientTgz.filename), join(dir, raftlockTgz.filename)], full),
      npm([...flags, join(dir, clientTgz.filename)], lean),
      cluster,
    ]);
    console.log(`# npm pack: ${t1 - t0} ms; npm install ×2 (and the harness cluster): ${Date.now() - t1} ms`);
    // The slow checks start now and overlap; the tests below await them.
    typeCheck = settle(typeCheckBoth());
    installedCluster = settle(startInstalledCluster());
  });
  after(async () => {
    for (const p of running) {
      try {
        process.kill(-p.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('raftlock ships the built JavaScript, declarations, bin, README and LICENSE, and nothing else', () => {
    const paths = raftlockTgz.files.map((f) => f.path);
    for (const p of ['package.json', 'README.md', 'LICENSE', 'bin/raftlock.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/cli/main.js']) assert.ok(paths.includes(p), `raftlock's tarball has ${p}`);
    const other = paths.filter((p) => !['package.json', 'README.md', 'LICENSE', 'bin/raftlock.js'].includes(p) && !/^dist\/src\/.*(\.js|\.d\.ts)$/.test(p));
    assert.deepEqual(other, []);
  });

  it('@raftlock/client ships its JavaScript, declarations, README and LICENSE, and nothing else', () => {
    const paths = clientTgz.files.map((f) => f.path);
    for (const p of ['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/fenced-query.js']) assert.ok(paths.includes(p), `the client's tarball has ${p}`);
    const other = paths.filter((p) => !['package.json', 'README.md', 'LICENSE'].includes(p) && !/^dist\/.*(\.js|\.d\.ts)$/.test(p));
    assert.deepEqual(other, []);
  });

  it("the lean client's installed tree has none of the server's dependencies", () => {
    const installed = installedPackages(lean);
    assert.ok(installed.includes('@raftlock/client'), `installed: ${installed.join(', ')}`);
    assert.deepEqual(installed.filter((p) => SERVER_DEPS.includes(p) || p === 'raftlock'), [], `installed: ${installed.join(', ')}`);
    const manifest = JSON.parse(readFileSync(join(lean, 'node_modules', '@raftlock', 'client', 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; peerDependenciesMeta?: Record<string, { optional?: boolean }> };
    assert.deepEqual(Object.keys(manifest.dependencies ?? {}), ['undici']);
    assert.equal(manifest.peerDependenciesMeta?.pg?.optional, true);
    assert.ok(!installed.includes('pg'), 'pg is an optional peer: not installed');
  });

  it('both import in JavaScript and take a lock on a real cluster; raftlock re-exports the one client', async () => {
    writeFileSync(join(full, 'lock.mjs'), LOCK_SCRIPT('raftlock'));
    writeFileSync(join(full, 'same.mjs'), "import * as a from 'raftlock'; import * as b from '@raftlock/client'; console.log(a.RaftlockClient === b.RaftlockClient && a.StaleFencingTokenError === b.StaleFencingTokenError);");
    writeFileSync(join(lean, 'lock.mjs'), LOCK_SCRIPT('@raftlock/client'));
    const endpoints = h!.endpoints.join(',');
    const [a, b, same] = await Promise.all([
      run(process.execPath, ['lock.mjs', endpoints], { cwd: full, timeout: 30_000 }),
      run(process.execPath, ['lock.mjs', endpoints], { cwd: lean, timeout: 30_000 }),
      run(process.execPath, ['same.mjs'], { cwd: full, timeout: 30_000 }),
    ]);
    assert.match(a.stdout, /^token=\d+$/m);
    assert.match(b.stdout, /^token=\d+$/m);
    assert.equal(same.stdout.trim(), 'true');
  });

  it('both type-check from TypeScript through the exports map (types)', async () => {
    const r = await typeCheck;
    if (!r.ok) throw r.error;
  });

  it('`npx raftlock --help` and `npx raftlock cluster` run from the installed bin', async () => {
    const help = await run('npx', ['--no-install', 'raftlock', '--help'], { cwd: full, env: npmEnv(), timeout: 30_000 });
    assert.match(help.stdout, /^Usage: raftlock/m);
    assert.match(help.stdout, /cluster/);
    const c = await installedCluster;
    if (!c.ok) throw c.error;
    try {
      const lock = await run(process.execPath, ['lock.mjs', c.value.api], { cwd: full, timeout: 30_000 });
      assert.match(lock.stdout, /^token=\d+$/m);
    } finally {
      await c.value.stop();
    }
  });
});
