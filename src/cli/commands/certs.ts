// `raftlock certs --out DIR`: a CA plus node and client certificates for a local or test
// cluster (docs/security.md "Quick start"), made by the openssl binary (no hand-written
// crypto). Files:
//   ca.crt ca.key                 the cluster CA (reused when DIR already has one, so a
//                                 node added later gets a certificate from the same CA)
//   {id}.crt {id}.key             API certificate of node {id}      → tls.cert_file/key_file
//   {id}-peer.crt {id}-peer.key   peer certificate of node {id}     → peer_tls.*
//   client.crt client.key         a client certificate (tls.client_cert_auth)
//   cluster.secret                32 random bytes, hex               → cluster_secret_file
// Node certificates carry serverAuth and clientAuth: a node is a server to clients and
// peers, and a client to peers (mutual TLS) and to the leader's API (forwarding). Their
// subjectAltName lists every host of the cluster file plus localhost/127.0.0.1/::1.
// Keys are EC P-256, written with mode 0600. This is a development helper: in
// production, issue certificates from your own PKI.
import type { Command } from 'commander';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../config.js';
import { DEFAULT_CONFIG, describeError, intFlag, UsageError } from './common.js';

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const HOST_RE = /^[A-Za-z0-9.:-]{1,253}$/;

export interface CertsOptions {
  out: string;
  nodes: string[];
  hosts: string[];
  days: number;
  force: boolean;
  cluster: string;
}

interface Flags {
  out: string;
  config?: string;
  nodes?: string;
  hosts?: string;
  days: string;
  force?: boolean;
}

export function registerCerts(program: Command): void {
  program
    .command('certs')
    .description('create a CA, node and client certificates and a cluster secret for a local cluster (development helper; uses openssl)')
    .requiredOption('--out <dir>', 'directory for the files (created if missing)')
    .option('--config <file>', `take node ids and hosts from this cluster file (default: ${DEFAULT_CONFIG} when present)`)
    .option('--nodes <ids>', 'comma-separated node ids (default: the cluster file\'s, else n1,n2,n3)')
    .option('--hosts <hosts>', 'extra comma-separated host names / IPs for the node certificates')
    .option('--days <n>', 'validity in days', '365')
    .option('--force', 'overwrite existing node/client files (the CA is always reused when present)')
    .action((f: Flags) => {
      try {
        const o = certsOptions(f);
        const written = createCerts(o);
        console.log(`wrote ${written.length} files to ${o.out}:\n  ${written.join('\n  ')}`);
        console.log('\nin cluster.config.json (https:// URLs for api and peer):');
        console.log(`  "tls":      { "cert_file": "${o.out}/{node}.crt", "key_file": "${o.out}/{node}.key", "ca_file": "${o.out}/ca.crt" },`);
        console.log(`  "peer_tls": { "cert_file": "${o.out}/{node}-peer.crt", "key_file": "${o.out}/{node}-peer.key", "ca_file": "${o.out}/ca.crt" },`);
        console.log(`  "cluster_secret_file": "${o.out}/cluster.secret"`);
        console.log(`clients: --ca-file ${o.out}/ca.crt (or RAFTLOCK_CA_FILE)`);
      } catch (err) {
        const { code, line } = describeError(err);
        process.stderr.write(`raftlock certs: ${line}\n`);
        process.exitCode = code;
      }
    });
}

function list(s: string | undefined): string[] {
  return (s ?? '').split(',').map((x) => x.trim()).filter(Boolean);
}

export function certsOptions(f: Flags): CertsOptions {
  const configPath = f.config ?? (existsSync(DEFAULT_CONFIG) ? DEFAULT_CONFIG : undefined);
  const config = configPath !== undefined ? loadConfig(configPath) : undefined;
  const nodes = f.nodes !== undefined ? list(f.nodes) : config ? config.nodes.map((n) => n.id) : ['n1', 'n2', 'n3'];
  for (const id of nodes) if (!ID_RE.test(id)) throw new UsageError(`--nodes: bad node id ${JSON.stringify(id)}`);
  if (nodes.length === 0) throw new UsageError('--nodes: at least one node id');
  const hosts = new Set(['localhost', '127.0.0.1', '::1', ...list(f.hosts)]);
  for (const n of config?.nodes ?? []) {
    for (const h of [new URL(n.api).hostname, new URL(n.peer).hostname, n.listenApi?.host, n.listenPeer?.host]) if (h) hosts.add(h.replace(/^\[|\]$/g, ''));
  }
  hosts.delete('0.0.0.0');
  hosts.delete('::');
  for (const h of hosts) if (!HOST_RE.test(h)) throw new UsageError(`--hosts: bad host ${JSON.stringify(h)}`);
  return { out: resolve(f.out), nodes, hosts: [...hosts], days: intFlag(f.days, '--days', 1, 36500), force: f.force === true, cluster: config?.cluster ?? 'local' };
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') throw new UsageError('openssl is not installed (it is needed to create certificates)');
    throw new Error(`openssl ${args[0]} failed: ${e.stderr?.toString().trim().split('\n')[0] ?? e.message}`);
  }
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Creates the files; returns their names. Throws UsageError when a file exists (no --force). */
export function createCerts(o: CertsOptions): string[] {
  mkdirSync(o.out, { recursive: true, mode: 0o700 });
  const p = (name: string): string => join(o.out, name);
  const leaves = [...o.nodes.flatMap((id) => [id, `${id}-peer`]), 'client'];
  if (!o.force) {
    const clash = [...leaves.flatMap((l) => [`${l}.crt`, `${l}.key`]), 'cluster.secret'].find((f) => existsSync(p(f)));
    if (clash) throw new UsageError(`${p(clash)} already exists; pass --force to overwrite`);
  }
  const written: string[] = [];
  if (!existsSync(p('ca.key')) || !existsSync(p('ca.crt'))) {
    openssl(['req', '-x509', '-new', ...EC, '-keyout', p('ca.key'), '-out', p('ca.crt'), '-days', String(o.days), '-subj', `/CN=raftlock CA ${o.cluster}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    chmodSync(p('ca.key'), 0o600);
    written.push('ca.crt', 'ca.key');
  }
  const san = o.hosts.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
  for (const leaf of leaves) {
    const isClient = leaf === 'client';
    const ext = p(`${leaf}.ext.tmp`);
    const csr = p(`${leaf}.csr.tmp`);
    writeFileSync(ext, [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      `extendedKeyUsage=${isClient ? 'clientAuth' : 'serverAuth,clientAuth'}`,
      ...(isClient ? [] : [`subjectAltName=${san}`]),
      '',
    ].join('\n'));
    try {
      openssl(['req', '-new', ...EC, '-keyout', p(`${leaf}.key`), '-out', csr, '-subj', `/O=raftlock ${o.cluster}/CN=${isClient ? 'raftlock-client' : leaf}`]);
      chmodSync(p(`${leaf}.key`), 0o600);
      openssl(['x509', '-req', '-in', csr, '-CA', p('ca.crt'), '-CAkey', p('ca.key'), '-set_serial', `0x${randomBytes(16).toString('hex')}`, '-days', String(o.days), '-out', p(`${leaf}.crt`), '-extfile', ext]);
    } finally {
      rmSync(ext, { force: true });
      rmSync(csr, { force: true });
    }
    written.push(`${leaf}.crt`, `${leaf}.key`);
  }
  writeFileSync(p('cluster.secret'), `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  chmodSync(p('cluster.secret'), 0o600);
  written.push('cluster.secret');
  return written;
}
