// `raftlock snapshot save FILE`: download a consistent backup through the leader, verify
// it, and only then put it in place (write to a temp file, fsync, rename, fsync the
// directory), so FILE is either a complete verified backup or untouched.
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { Agent, request } from 'undici';
import type { RaftlockClient } from '@raftlock/client';
import { decodeBackup, sha256Hex, type BackupMeta } from '../../server/ops/format/backup-file.js';
import { CliExit, EXIT, UsageError } from './common.js';

const MAX_BACKUP_BYTES = 2 ** 31 - 1;

export interface SaveOptions {
  file: string;
  force: boolean;
  token?: string;
  caFile?: string;
  timeoutMs: number;
  retryForMs: number;
}

export interface SaveResult {
  file: string;
  bytes: number;
  sha256: string;
  from: string;
  meta: BackupMeta;
}

/** The leader's API URL first (no relay hop for a large body), then every endpoint. */
async function candidates(client: RaftlockClient, endpoints: string[]): Promise<string[]> {
  const out: string[] = [];
  try {
    const v = await client.cluster();
    const leader = v.members.find((m) => m.id === v.leaderId)?.api;
    if (leader) out.push(leader);
  } catch {
    /* no node answered /v1/cluster: try the endpoints as they are */
  }
  for (const e of endpoints) if (!out.includes(e)) out.push(e);
  return out;
}

export async function saveSnapshot(client: RaftlockClient, endpoints: string[], o: SaveOptions): Promise<SaveResult> {
  const target = resolve(o.file);
  if (existsSync(target) && !o.force) throw new UsageError(`${o.file} exists; pass --force to replace it`);
  if (!existsSync(dirname(target))) throw new UsageError(`directory ${dirname(target)} does not exist`);
  let ca: Buffer | undefined;
  const caFile = o.caFile ?? process.env.RAFTLOCK_CA_FILE;
  if (caFile) {
    try {
      ca = readFileSync(caFile);
    } catch (err) {
      throw new UsageError(`--ca-file ${caFile}: ${(err as Error).message}`);
    }
  }
  const token = o.token ?? process.env.RAFTLOCK_TOKEN;
  const agent = new Agent({ connectTimeout: Math.min(o.timeoutMs, 5000), ...(ca ? { connect: { ca } } : {}) });
  const deadline = Date.now() + o.retryForMs;
  const failures: string[] = [];
  try {
    do {
      for (const url of await candidates(client, endpoints)) {
        const got = await fetchBackup(agent, url, token, o.timeoutMs).catch((err: unknown) => {
          if (err instanceof CliExit) throw err;
          failures.push(`${url}: ${(err as Error).message}`);
          return null;
        });
        if (!got) continue;
        let meta: BackupMeta;
        try {
          meta = decodeBackup(got).meta;
        } catch (err) {
          failures.push(`${url}: the downloaded backup does not verify (${(err as Error).message})`);
          continue;
        }
        writeAtomically(target, got);
        return { file: target, bytes: got.length, sha256: sha256Hex(got), from: url, meta };
      }
      if (Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    } while (Date.now() < deadline);
  } finally {
    await agent.close().catch(() => undefined);
  }
  throw new CliExit(EXIT.unavailable, `no consistent snapshot could be taken (${failures.slice(-3).join('; ') || 'no endpoint answered'}); check the cluster with \`raftlock status\``);
}

async function fetchBackup(agent: Agent, base: string, token: string | undefined, timeoutMs: number): Promise<Buffer | null> {
  const res = await request(`${base.replace(/\/$/, '')}/v1/snapshot`, {
    dispatcher: agent,
    headers: { accept: 'application/octet-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    headersTimeout: timeoutMs,
    bodyTimeout: Math.max(timeoutMs, 60_000),
  });
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of res.body) {
    n += (c as Buffer).length;
    if (n > MAX_BACKUP_BYTES) {
      res.body.destroy();
      throw new Error('the backup is larger than 2 GiB');
    }
    chunks.push(c as Buffer);
  }
  const body = Buffer.concat(chunks);
  if (res.statusCode === 200) return body;
  let message = `HTTP ${res.statusCode}`;
  try {
    const e = (JSON.parse(body.toString('utf8')) as { error?: { code?: string; message?: string } }).error;
    if (e?.message) message = `${e.code ?? res.statusCode}: ${e.message}`;
  } catch {
    /* not the error shape */
  }
  if (res.statusCode === 401 || res.statusCode === 403) throw new CliExit(EXIT.denied, `${base}: ${message}; a token with the admin right is needed (--token / RAFTLOCK_TOKEN)`);
  throw new Error(message);
}

function writeAtomically(target: string, bytes: Buffer): void {
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
  try {
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, target);
    const dfd = openSync(dirname(target), 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new CliExit(EXIT.internal, `could not write ${target}: ${(err as Error).message}`);
  }
}
