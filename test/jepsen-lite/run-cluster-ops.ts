// The runner's side of the membership, disk and clock faults (NemesisEnv in nemesis.ts):
// operator requests through the probe (from the client namespace), node processes in
// network slots, a damaged node's restart and its readiness, fake clocks. run.ts owns the
// state (which ids run where); this class acts on it through ClusterCtx.
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Helper, NodeProcs, NodeSpec } from './procs.js';
import type { NetLab } from './netns.js';
import type { FakeClocks } from './clock.js';
import { newestLog, type Surgery } from './disk-faults.js';
import type { DamagedStart } from './nemesis.js';

export interface ClusterCtx {
  /** the current members' ids (changes under membership faults) */
  ids: string[];
  /** every node's URLs, by id; slots are reused by later ids */
  specs: NodeSpec[];
  /** the spare slot (growth), or null when it is in use */
  spare(): NodeSpec | null;
  /** set the spare slot (null: taken; a spec: given back) */
  takeSpare(v: NodeSpec | null): void;
  nodes: NodeProcs;
  probe: Helper;
  lab: NetLab | null;
  clocks: FakeClocks | null;
  /** the run's folder and cluster file */
  dir: string;
  configPath: string;
  now(): number;
  faultLog(o: Record<string, unknown>): void;
  problem(text: string): void;
  /** the next unused id: n<nodes+1>, … */
  newId(): string;
  /** restart killed nodes and wait until they serve */
  restart(ids: string[]): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const oneLine = (a: { status: number; body: unknown } | null): string => (a ? `${a.status} ${JSON.stringify(a.body).slice(0, 200)}` : 'no answer');

/** how long a node may take to start serving (or to refuse) on a loaded machine */
const START_LIMIT_MS = 120_000;

export class ClusterOps {
  constructor(private readonly c: ClusterCtx) {}

  dataDir(id: string): string {
    return join(this.c.dir, 'data', id);
  }

  private async http(method: string, path: string, body?: unknown, timeoutMs = 5000): Promise<{ endpoint: string; status: number; body: unknown } | null> {
    return (await this.c.probe.ask({ cmd: 'http', method, path, ...(body !== undefined ? { body } : {}), timeoutMs }, timeoutMs * (this.c.specs.length + 2) + 2000)) as { endpoint: string; status: number; body: unknown } | null;
  }

  private async views(): Promise<{ endpoint: string; status?: number; body?: ClusterBody }[]> {
    return ((await this.c.probe.ask({ cmd: 'cluster' }, 3000)) as { endpoint: string; status?: number; body?: ClusterBody }[] | null) ?? [];
  }

  /** the current leader's own view (highest term), or null */
  async leaderView(): Promise<ClusterBody | null> {
    let best: ClusterBody | null = null;
    for (const v of await this.views()) {
      const b = v.body;
      if (v.status === 200 && b?.role === 'leader' && Array.isArray(b.members) && (!best || (b.term ?? 0) > (best.term ?? 0))) best = b;
    }
    return best;
  }

  async members(): Promise<Map<string, string> | null> {
    const b = await this.leaderView();
    return b ? new Map(b.members!.map((x) => [x.id, x.role ?? '?'])) : null;
  }

  // ---- membership ----------------------------------------------------------------------

  async deleteOnce(id: string): Promise<{ status: number | null; text: string }> {
    const a = await this.http('DELETE', `/v1/cluster/members/${encodeURIComponent(id)}`, undefined, 20_000);
    this.c.faultLog({ membership: `DELETE ${id} (once)`, answer: oneLine(a) });
    return { status: a?.status ?? null, text: a ? JSON.stringify(a.body).slice(0, 300) : 'no answer' };
  }

  /** DELETE (retrying 409/503/504 and silence) until the leader's configuration no longer
   *  has it, then stop the process; it leaves ids */
  async removeMember(id: string): Promise<void> {
    const np = this.c.nodes;
    np.expectExit(id); // a removed node's exit is ours, not a crash
    const end = this.c.now() + 30_000;
    let last = '';
    try {
      while (this.c.now() < end) {
        const a = await this.http('DELETE', `/v1/cluster/members/${encodeURIComponent(id)}`, undefined, 20_000);
        last = oneLine(a);
        this.c.faultLog({ membership: `DELETE ${id}`, answer: last });
        if (a && a.status >= 400 && a.status < 500 && a.status !== 404 && a.status !== 409) throw new Error(`DELETE ${id}: ${last}`);
        // 200, or 404/504/silence after which the configuration may already be without it
        const m = await this.members();
        if (m && !m.has(id)) break;
        if (a?.status === 200 && m === null) break; // committed (200), leader not visible right now
        await sleep(300);
      }
      if (this.c.now() >= end) throw new Error(`DELETE ${id} did not take effect within 30 s (last answer: ${last})`);
    } catch (err) {
      np.expectExit(id, false);
      throw err;
    }
    await np.kill(id);
    const i = this.c.ids.indexOf(id);
    if (i >= 0) this.c.ids.splice(i, 1);
    // a node grown into the spare slot gives the slot back
    const spec = this.c.specs.find((s) => s.id === id);
    if (spec && spec.slot === 'spare') this.c.takeSpare({ ...spec, id: 'spare' });
    this.c.faultLog({ membership: `removed ${id}`, members: [...this.c.ids] });
  }

  /** a node with an empty data dir in `slotOf`'s place, joining through a current member
   *  (--join); a new id, or `slotOf`'s own (sameId). Resolves once the leader lists it as a
   *  voter (bounded: 60 s; a violation otherwise) */
  async addMember(slotOf: string, o: { sameId?: boolean } = {}): Promise<string> {
    const np = this.c.nodes;
    const old = this.c.specs.find((s) => s.id === slotOf)!;
    const id = o.sameId ? slotOf : this.c.newId();
    const spec: NodeSpec = { ...old, id };
    this.c.specs.splice(this.c.specs.indexOf(old), 1, spec);
    if (id !== slotOf) this.c.lab?.alias(id, slotOf);
    // an id used before starts on an empty directory (its old one is the removed incarnation's)
    rmSync(this.dataDir(id), { recursive: true, force: true });
    const via = this.c.specs.find((s) => this.c.ids.includes(s.id))!;
    np.setJoin(id, via.api, spec.api, spec.peer);
    this.c.ids.push(id);
    np.start(id);
    this.c.faultLog({ membership: `started ${id} --join ${via.api} in ${slotOf}'s slot`, members: [...this.c.ids] });
    await this.awaitVoter(id, `${id} (joining in place of ${slotOf})`);
    return id;
  }

  /** until the leader lists `id` as a voter (60 s); a problem when it does not, unless `quiet` */
  private async awaitVoter(id: string, what: string, quiet = false): Promise<boolean> {
    const end = this.c.now() + 60_000;
    while (this.c.now() < end) {
      const role = (await this.members())?.get(id);
      if (role === 'follower' || role === 'leader') {
        this.c.faultLog({ membership: `${id} is a voter`, members: [...this.c.ids] });
        return true;
      }
      if (!this.c.nodes.running(id)) break; // it stopped (a refused start): no point waiting
      await sleep(100);
    }
    const problem = `membership: ${what} was not a voter ${this.c.nodes.running(id) ? '60 s after it started' : 'and its process exited'}; the cluster stayed below its size`;
    if (!quiet) this.c.problem(problem);
    this.c.faultLog({ membership: problem });
    return false;
  }

  /** growth etcd's way (docs/membership.md "Add it, then start it"): member add, then serve
   *  --config (a copy of the cluster file that lists the node) --node on an empty data dir;
   *  `grew` false: it did not become a voter (a problem is reported, the learner removed) */
  async growMember(): Promise<{ id: string; grew: boolean }> {
    const slot = this.c.spare();
    if (!slot) throw new Error('the spare slot is in use (the cluster already grew)');
    const id = this.c.newId();
    const spec: NodeSpec = { ...slot, id };
    const end = this.c.now() + 30_000;
    let last = '';
    for (;;) {
      const a = await this.http('POST', '/v1/cluster/members', { id, api: spec.api, peer: spec.peer }, 20_000);
      last = oneLine(a);
      this.c.faultLog({ membership: `POST /v1/cluster/members ${id}`, answer: last });
      if (a?.status === 200) break;
      if ((a && a.status >= 400 && a.status < 500 && a.status !== 409) || this.c.now() >= end) throw new Error(`member add ${id}: ${last}`);
      await sleep(300);
    }
    this.c.takeSpare(null);
    this.c.specs.push(spec);
    this.c.lab?.alias(id, 'spare');
    // the operator adds the node to the cluster file and starts it from there
    const cfg = JSON.parse(readFileSync(this.c.configPath, 'utf8')) as { nodes: { id: string; api: string; peer: string; listen_api?: string; listen_peer?: string }[] };
    cfg.nodes = [...cfg.nodes, { id, api: spec.api, peer: spec.peer, listen_api: spec.listenApi, listen_peer: spec.listenPeer }];
    const path = join(this.c.dir, `cluster.config.${id}.json`);
    writeFileSync(path, JSON.stringify(cfg, null, 2));
    rmSync(this.dataDir(id), { recursive: true, force: true });
    this.c.nodes.setConfig(id, path);
    this.c.ids.push(id);
    const from = logSize(this.c.nodes.logPath(id));
    this.c.nodes.expectExit(id); // judged below: a refusal is reported, not a crash
    this.c.nodes.start(id);
    this.c.faultLog({ membership: `started ${id}: serve --config ${path} --node ${id} (empty data dir, spare slot)`, members: [...this.c.ids] });
    const running = (): boolean => this.c.nodes.running(id);
    const voter = await this.awaitVoter(id, `${id} (added, then started with --config/--node on an empty data dir)`, !running());
    if (running()) this.c.nodes.expectExit(id, false);
    if (!voter && !running()) {
      const line = lastLines(this.c.nodes.logPath(id), from);
      this.c.problem(`member-grow: ${id}, added with member add and started etcd's way (serve --config --node, empty data dir), exited instead of joining: ${line}`);
      // the cluster must still get back to its size: remove the learner again
      await this.removeMember(id).catch((err: unknown) => this.c.problem(`member-grow: could not remove the learner ${id} again: ${(err as Error).message}`));
    }
    return { id, grew: voter };
  }

  async transferLeadership(to: string | undefined): Promise<string> {
    const a = await this.http('POST', '/v1/cluster/transfer-leadership', to === undefined ? {} : { to }, 10_000);
    this.c.faultLog({ membership: `transfer-leadership ${to ?? ''}`, answer: oneLine(a) });
    return oneLine(a);
  }

  /** remove → wipe → join under the same id (the node's process is dead or refused) */
  async rebuild(id: string): Promise<void> {
    await this.removeMember(id);
    await this.addMember(id, { sameId: true });
  }

  // ---- disks ---------------------------------------------------------------------------

  async acked(id: string): Promise<{ match: number; lag: number } | null> {
    const b = await this.leaderView();
    const m = b?.members?.find((x) => x.id === id);
    if (!m || m.match_index === undefined) return null;
    return { match: m.match_index, lag: m.lag ?? 0 };
  }

  walMark(id: string): { file: string; size: number } | null {
    try {
      return newestLog(this.dataDir(id));
    } catch {
      return null;
    }
  }

  surgery(id: string, f: (dir: string) => Surgery): Surgery {
    if (this.c.nodes.running(id)) throw new Error(`surgery on ${id} while it runs`);
    const s = f(this.dataDir(id));
    this.c.faultLog({ corrupt: id, surgery: s.detail });
    return s;
  }

  /** start a node whose directory was damaged: it serves (/healthz), or it exits */
  async restartDamaged(id: string): Promise<DamagedStart> {
    const np = this.c.nodes;
    const spec = this.c.specs.find((s) => s.id === id)!;
    const from = logSize(np.logPath(id));
    const started = this.c.now();
    np.expectExit(id);
    np.start(id);
    const exit = np.exitOf(id)!;
    let exited: { code: number | null; signal: string | null } | null = null;
    void exit.then((e) => (exited = e));
    const end = started + START_LIMIT_MS;
    let serving = false;
    while (this.c.now() < end && exited === null) {
      const up = ((await this.c.probe.ask({ cmd: 'health' }, 3000)) as string[] | null) ?? [];
      if (up.includes(spec.api)) {
        serving = true;
        break;
      }
      await sleep(100);
    }
    const ms = Math.round(this.c.now() - started);
    if (serving || exited === null) np.expectExit(id, false);
    await sleep(200); // the log stream trails the process
    const text = logSince(np.logPath(id), from);
    const dataDir = this.dataDir(id);
    if (exited !== null) {
      const e: { code: number | null; signal: string | null } = exited;
      const line = text.split('\n').reverse().find((l) => l.startsWith('raftlock:') || l.startsWith('corrupt') || l.startsWith('storage') || l.startsWith('data directory')) ?? null;
      this.c.faultLog({ corrupt: id, exit: e, line });
      return { exit: { ...e, line }, loadedLastIndex: null, dataDir, ms };
    }
    if (!serving) this.c.problem(`corrupt: ${id} neither served nor exited within ${START_LIMIT_MS / 1000} s of being started on its damaged disk`);
    const loaded = loadedLastIndex(text);
    this.c.faultLog({ corrupt: id, serving, loadedLastIndex: loaded });
    return { exit: null, loadedLastIndex: loaded, dataDir, ms };
  }

  /** sample /readyz of `id` against the leader's commit index: ready while it has not
   *  applied what the leader had committed 3 s before, and without applying anything since
   *  the sample before (stuck, not catching up), at two samples in a row, is a problem (a
   *  healthy follower applies within a heartbeat or two) */
  async watchReadiness(id: string, ms: number): Promise<string | null> {
    const spec = this.c.specs.find((s) => s.id === id);
    if (!spec) return null;
    const end = this.c.now() + ms;
    const commits: { t: number; commit: number }[] = [];
    let strikes = 0;
    let before: number | undefined;
    while (this.c.now() < end) {
      const l = await this.leaderView();
      if (l?.commit_index !== undefined) commits.push({ t: this.c.now(), commit: l.commit_index });
      const ready = (await this.c.probe.ask({ cmd: 'one', endpoint: spec.api, path: '/readyz' }, 2000)) as { status: number } | null;
      const own = (await this.c.probe.ask({ cmd: 'one', endpoint: spec.api, path: '/v1/cluster' }, 2000)) as { status: number; body?: ClusterBody } | null;
      const applied = own?.body?.applied_index;
      const then = commits.filter((c) => c.t <= this.c.now() - 3000).at(-1);
      const stuck = applied !== undefined && before !== undefined && applied <= before;
      if (ready?.status === 200 && applied !== undefined && then !== undefined && applied < then.commit && stuck) {
        if (++strikes >= 2) return `${id} answered /readyz 200 with applied index ${applied}, not moving, while the leader had committed ${then.commit} ${Math.round(this.c.now() - then.t)} ms before (stuck behind)`;
      } else strikes = 0;
      before = applied;
      await sleep(500);
    }
    return null;
  }

  // ---- clocks --------------------------------------------------------------------------

  async restartWallClock(id: string): Promise<void> {
    await this.c.nodes.kill(id);
    this.wallNext.add(id);
    await this.c.restart([id]);
  }

  /** ids whose next start fakes only the wall clock (the step variant) */
  readonly wallNext = new Set<string>();
}

export interface ClusterBody {
  role?: string;
  node_id?: string;
  term?: number;
  commit_index?: number;
  applied_index?: number;
  members?: { id: string; role?: string; match_index?: number; lag?: number }[];
}

function logSize(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

function logSince(path: string, from: number): string {
  return existsSync(path) ? readFileSync(path, 'utf8').slice(from) : '';
}

/** the node's last line that is not JSON (a refusal), else its last line */
function lastLines(path: string, from: number): string {
  const lines = logSince(path, from).trim().split('\n').filter(Boolean);
  return (lines.filter((l) => !l.startsWith('{')).at(-1) ?? lines.at(-1) ?? '(no output)').slice(0, 400);
}

/** the last index of the log the node loaded (its "storage loaded" line) */
function loadedLastIndex(text: string): number | null {
  for (const line of text.split('\n')) {
    if (!line.includes('"storage loaded"')) continue;
    try {
      const j = JSON.parse(line) as { lastIndex?: unknown };
      if (typeof j.lastIndex === 'number') return j.lastIndex;
    } catch {
      /* not JSON */
    }
  }
  return null;
}
