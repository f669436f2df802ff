// A private network for one run: every node in its own network namespace, plus one
// namespace for the clients, each with a veth whose other end sits on a bridge made for
// this run. Addresses live only inside those namespaces (10.77.0.0/24; the bridge itself
// has no address, so the host's routing never sees them and runs cannot collide).
// Partitions are iptables DROP rules in the receiving node's namespace; packet faults are
// tc netem on the node's interface, or, on kernels without sch_netem, iptables
// statistic/TEE rules (loss, duplication) plus a tbf rate limit (queueing delay).
//
// Every name carries the run id (rlj<5 hex>…), and destroy() removes exactly what
// create() made, so nothing outside the run is touched. Needs root.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface NetLabOptions {
  runId: string; // 5 hex chars
  nodes: string[];
  /** called with each command's text, for the fault log */
  trace?: (line: string) => void;
}

export type PacketMode = 'netem' | 'iptables-fallback';

/** Can this process build namespaces? (root, `ip` and `iptables` on PATH) */
export async function netnsSupport(): Promise<{ ok: true } | { ok: false; reason: string }> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return { ok: false, reason: 'not running as root' };
  for (const [bin, arg] of [['ip', '-V'], ['iptables', '--version'], ['tc', '-V']] as const) {
    try {
      await run(bin, [arg]);
    } catch {
      return { ok: false, reason: `${bin} is not installed (scripts/install-test-deps.sh installs iproute2 and iptables)` };
    }
  }
  return { ok: true };
}

export class NetLab {
  readonly bridge: string;
  private readonly created: { netns: string[]; links: string[] } = { netns: [], links: [] };
  packetMode: PacketMode = 'netem';
  private destroyed = false;
  /** node id → the slot (original node id) whose namespace and address it lives in: a node
   *  that joins in a removed node's place (the membership fault) takes over its slot */
  private readonly slots = new Map<string, string>();

  private readonly o: NetLabOptions;

  private constructor(o: NetLabOptions) {
    // a copy: the runner's node list changes under membership faults, the slots do not
    this.o = { ...o, nodes: [...o.nodes] };
    this.bridge = `rlj${o.runId}b`;
  }

  /** let node `id` live in the slot of `slotOf` (which may itself be an alias) */
  alias(id: string, slotOf: string): void {
    this.slots.set(id, this.slots.get(slotOf) ?? slotOf);
  }

  private slot(id: string): string {
    return this.slots.get(id) ?? id;
  }

  /** the namespace a node (or 'client') lives in */
  ns(id: string): string {
    return `rlj${this.o.runId}-${this.slot(id)}`;
  }

  ip(id: string): string {
    if (id === 'client') return '10.77.0.200';
    const i = this.o.nodes.indexOf(this.slot(id));
    if (i < 0) throw new Error(`netlab: unknown node ${id}`);
    return `10.77.0.${11 + i}`;
  }

  static async create(o: NetLabOptions): Promise<NetLab> {
    if (!/^[0-9a-f]{5}$/.test(o.runId)) throw new Error(`netlab: run id must be 5 hex chars, got ${o.runId}`);
    const lab = new NetLab(o);
    try {
      await lab.setup();
    } catch (err) {
      await lab.destroy();
      throw err;
    }
    return lab;
  }

  private async sh(bin: string, args: string[]): Promise<string> {
    this.o.trace?.(`${bin} ${args.join(' ')}`);
    const { stdout } = await run(bin, args, { timeout: 15_000 });
    return stdout;
  }

  /** run a command inside a namespace */
  async exec(id: string, bin: string, args: string[]): Promise<string> {
    return this.sh('ip', ['netns', 'exec', this.ns(id), bin, ...args]);
  }

  /** argv that starts a program inside a namespace (ip netns exec execs, so the pid is the program's) */
  wrap(id: string, argv: string[]): string[] {
    return ['ip', 'netns', 'exec', this.ns(id), ...argv];
  }

  private async setup(): Promise<void> {
    await this.sh('ip', ['link', 'add', 'name', this.bridge, 'type', 'bridge']);
    this.created.links.push(this.bridge);
    await this.sh('ip', ['link', 'set', this.bridge, 'up']);
    const members = [...this.o.nodes, 'client'];
    for (const [i, id] of members.entries()) {
      const ns = this.ns(id);
      const hostEnd = `rlj${this.o.runId}${id === 'client' ? 'c' : `n${i}`}`;
      await this.sh('ip', ['netns', 'add', ns]);
      this.created.netns.push(ns);
      await this.sh('ip', ['link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
      this.created.links.push(hostEnd);
      await this.sh('ip', ['link', 'set', hostEnd, 'master', this.bridge, 'up']);
      await this.exec(id, 'ip', ['addr', 'add', `${this.ip(id)}/24`, 'dev', 'eth0']);
      await this.exec(id, 'ip', ['link', 'set', 'eth0', 'up']);
      await this.exec(id, 'ip', ['link', 'set', 'lo', 'up']);
    }
    // probe netem once; the fallback keeps packet faults real on kernels without it
    try {
      await this.exec(this.o.nodes[0]!, 'tc', ['qdisc', 'add', 'dev', 'eth0', 'root', 'netem', 'delay', '1ms']);
      await this.exec(this.o.nodes[0]!, 'tc', ['qdisc', 'del', 'dev', 'eth0', 'root']);
      this.packetMode = 'netem';
    } catch {
      this.packetMode = 'iptables-fallback';
    }
  }

  // ---- partitions ------------------------------------------------------------------

  /** drop every packet `to` receives from `from` (one direction) */
  async cut(from: string, to: string): Promise<void> {
    await this.exec(to, 'iptables', ['-w', '-A', 'INPUT', '-s', this.ip(from), '-j', 'DROP']);
  }

  /** cut both directions between every a ∈ A and b ∈ B */
  async split(a: readonly string[], b: readonly string[]): Promise<void> {
    for (const x of a) for (const y of b) if (x !== y) {
      await this.cut(x, y);
      await this.cut(y, x);
    }
  }

  async healPartitions(): Promise<void> {
    for (const id of this.o.nodes) await this.exec(id, 'iptables', ['-w', '-F', 'INPUT']);
  }

  // ---- packet faults -----------------------------------------------------------------

  async startPacketFaults(p: { delayMs: number; jitterMs: number; loss: number; duplicate: number; reorder: number }): Promise<string> {
    if (this.packetMode === 'netem') {
      for (const id of this.o.nodes) {
        await this.exec(id, 'tc', ['qdisc', 'replace', 'dev', 'eth0', 'root', 'netem', 'delay', `${p.delayMs}ms`, `${p.jitterMs}ms`, 'loss', `${p.loss}%`, 'duplicate', `${p.duplicate}%`, 'reorder', `${p.reorder}%`, '50%']);
      }
      return `netem delay ${p.delayMs}±${p.jitterMs}ms loss ${p.loss}% duplicate ${p.duplicate}% reorder ${p.reorder}%`;
    }
    // no sch_netem in this kernel: random loss and duplication between nodes with
    // iptables, and a tight token bucket on each node's link for queueing delay
    for (const id of this.o.nodes) {
      for (const other of this.o.nodes) {
        if (other === id) continue;
        await this.exec(id, 'iptables', ['-w', '-A', 'INPUT', '-s', this.ip(other), '-m', 'statistic', '--mode', 'random', '--probability', String(p.loss / 100), '-j', 'DROP']);
        await this.exec(id, 'iptables', ['-w', '-t', 'mangle', '-A', 'POSTROUTING', '-d', this.ip(other), '-m', 'statistic', '--mode', 'random', '--probability', String(p.duplicate / 100), '-j', 'TEE', '--gateway', this.ip(other)]);
      }
      await this.exec(id, 'tc', ['qdisc', 'replace', 'dev', 'eth0', 'root', 'tbf', 'rate', '4mbit', 'burst', '16kb', 'latency', `${Math.max(20, p.delayMs * 3)}ms`]);
    }
    return `iptables-fallback (no sch_netem): loss ${p.loss}% duplicate ${p.duplicate}% via TEE, tbf 4mbit (queueing delay); no reordering`;
  }

  async stopPacketFaults(): Promise<void> {
    for (const id of this.o.nodes) {
      await this.exec(id, 'tc', ['qdisc', 'del', 'dev', 'eth0', 'root']).catch(() => undefined); // none installed: fine
      await this.exec(id, 'iptables', ['-w', '-F', 'INPUT']);
      await this.exec(id, 'iptables', ['-w', '-t', 'mangle', '-F', 'POSTROUTING']);
    }
  }

  /** namespaces and links with this run's id that still exist (empty after destroy()) */
  async leftovers(): Promise<string[]> {
    const tag = `rlj${this.o.runId}`;
    const ns = (await run('ip', ['netns', 'list'])).stdout.split('\n').map((l) => l.split(' ')[0]!).filter((n) => n.startsWith(tag));
    const links = (await run('ip', ['-o', 'link', 'show'])).stdout.split('\n').map((l) => l.split(':')[1]?.trim().split('@')[0] ?? '').filter((n) => n.startsWith(tag));
    return [...ns.map((n) => `netns ${n}`), ...links.map((l) => `link ${l}`)];
  }

  /** remove every namespace and link this lab made (idempotent; never throws) */
  async destroy(): Promise<string[]> {
    if (this.destroyed) return [];
    this.destroyed = true;
    const problems: string[] = [];
    for (const link of [...this.created.links].reverse()) {
      await this.sh('ip', ['link', 'del', link]).catch((e: Error) => {
        if (!/Cannot find device/.test(e.message)) problems.push(`ip link del ${link}: ${e.message.split('\n')[0]}`);
      });
    }
    for (const ns of [...this.created.netns].reverse()) {
      await this.sh('ip', ['netns', 'del', ns]).catch((e: Error) => problems.push(`ip netns del ${ns}: ${e.message.split('\n')[0]}`));
    }
    return problems;
  }
}
