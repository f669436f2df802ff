// The configuration of a node started with `serve --join URL` (docs/membership.md).
// Decision: a joiner's membership never comes from a cluster file. If --config is given,
// the file supplies the cluster's name and settings (timeouts, session limits, TLS, data
// dir); its `nodes` list is ignored except to default this node's URLs and listen
// addresses when the file happens to list it. Without --config, built-in defaults apply
// and the cluster's name is asked of URL (GET /v1/cluster) at every start.
import { resolve } from 'node:path';
import { ConfigError, loadConfig, parseConfig, urlProblem, type Config, type NodeConfig } from '../config.js';
import { fetchClusterView } from '../server/membership/join.js';

export interface JoinFlags {
  config?: string;
  node: string;
  join: { url: string; api?: string; peer?: string };
}

const ASK_TIMEOUT_MS = 60_000;

export async function joinConfig(f: JoinFlags): Promise<Config> {
  const joinProblem = urlProblem(f.join.url);
  if (joinProblem) throw new ConfigError(`--join: ${joinProblem}`);
  const base = f.config !== undefined ? loadConfig(f.config) : undefined;
  const listed = base?.nodes.find((n) => n.id === f.node);
  const api = f.join.api ?? listed?.api;
  const peer = f.join.peer ?? listed?.peer;
  if (api === undefined || peer === undefined) throw new ConfigError(`--${api === undefined ? 'api' : 'peer'}: required with --join (this node's advertised URL)`);
  for (const [flag, url] of [['--api', api], ['--peer', peer]] as const) {
    const p = urlProblem(url);
    if (p) throw new ConfigError(`${flag}: ${p}`);
  }
  if (new URL(api).origin === new URL(peer).origin) throw new ConfigError('--peer: must differ from --api (two servers cannot share one port)');
  const self: NodeConfig = {
    id: f.node,
    api: api.replace(/\/$/, ''),
    peer: peer.replace(/\/$/, ''),
    ...(listed?.listenApi && f.join.api === undefined ? { listenApi: listed.listenApi } : {}),
    ...(listed?.listenPeer && f.join.peer === undefined ? { listenPeer: listed.listenPeer } : {}),
  };
  // validate the id and URL schemes with the file's own rules (one node: this one)
  const config = base ?? parseConfig({ nodes: [{ id: self.id, api: self.api, peer: self.peer }] }, resolve('raftlock-serve-join'));
  if (base) checkScheme(config, self);
  else if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/.test(f.node)) throw new ConfigError(`--node: expected 1-63 chars of [A-Za-z0-9_-], got ${JSON.stringify(f.node)}`);
  const cluster = base ? await checkName(f.join.url, base.cluster) : await askName(f.join.url);
  return Object.assign({}, config, { cluster, nodes: [self] });
}

function checkScheme(c: Config, self: NodeConfig): void {
  if (c.tls !== undefined !== self.api.startsWith('https:')) throw new ConfigError(`--api: must be ${c.tls ? 'https' : 'http'}:// (the cluster file ${c.tls ? 'sets' : 'does not set'} "tls")`);
  if (c.peerTls !== undefined !== self.peer.startsWith('https:')) throw new ConfigError(`--peer: must be ${c.peerTls ? 'https' : 'http'}:// (the cluster file ${c.peerTls ? 'sets' : 'does not set'} "peer_tls")`);
}

/** With a cluster file: a member that answers must agree on the name (else a typo'd file
 *  would make every peer message bounce); an unreachable one is not an error here. */
async function checkName(url: string, name: string): Promise<string> {
  try {
    const v = await fetchClusterView(url, { timeoutMs: 3000, ...tokenOpt() });
    if (v.cluster !== undefined && v.cluster !== name) throw new ConfigError(`--join: the cluster at ${url} is named "${v.cluster}" but the cluster file says "${name}"`);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
  }
  return name;
}

async function askName(url: string): Promise<string> {
  const deadline = Date.now() + ASK_TIMEOUT_MS;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const v = await fetchClusterView(url, { timeoutMs: 3000, ...tokenOpt() });
      if (typeof v.cluster === 'string' && v.cluster.length > 0) return v.cluster;
      throw new ConfigError(`--join: ${url} did not say the cluster's name; pass --config with the cluster file`);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new ConfigError(`--join: could not ask ${url} for the cluster's name within ${ASK_TIMEOUT_MS / 1000} s (${last}); pass --config with the cluster file to start without it`);
}

function tokenOpt(): { token?: string } {
  const t = process.env.RAFTLOCK_TOKEN;
  return t ? { token: t } : {};
}
