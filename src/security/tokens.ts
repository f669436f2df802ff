// API tokens (docs/contract.md §2 "cluster.config.json" `auth.tokens_file`,
// docs/security.md "API tokens"). tokens.json lists tokens by the SHA-256 of their secret,
// never the secret itself, so the file can be read by operators and backed up without
// handing out credentials (like Consul ACL tokens, etcd's hashed passwords). Each token has
// rights on lock-name prefixes:
//
//   read   GET locks, list, check, sessions, /v1/cluster, /metrics
//   lock   open/renew/close its own sessions, acquire/renew/release locks        (⊇ read)
//   admin  act on sessions other tokens opened; with prefix "" also cluster ops    (⊇ lock)
//
// A right on prefix P covers every lock name that starts with P (byte-wise, no implied
// "/": prefix "billing" also covers "billing2/x"; write "billing/" to mean the folder).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { zodErrorText } from '../zod-error.js';
import { ApiError } from '../api/errors.js';
import type { Authorizer, Right } from '../api/routes/context.js';
import { PRINCIPAL_RE } from '../lock-fsm/names.js';

export class TokensFileError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'TokensFileError';
  }
}

const RIGHTS = ['read', 'lock', 'admin'] as const;
/** what each right includes */
const IMPLIED: Record<Right, readonly Right[]> = { read: ['read'], lock: ['read', 'lock'], admin: ['read', 'lock', 'admin'] };
/** same alphabet as lock names, possibly empty (= every name) */
const PREFIX_RE = /^[A-Za-z0-9._:/-]{0,256}$/;
/** a bearer token is opaque to us; bound it so hashing a header never costs much */
const TOKEN_RE = /^[\x21-\x7e]{1,4096}$/;

const fileSchema = z.strictObject({
  tokens: z
    .array(
      z.strictObject({
        name: z.string().regex(PRINCIPAL_RE, 'must be 1-128 chars of [A-Za-z0-9._:@-]'),
        sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits (sha256 of the token)'),
        rights: z.array(z.strictObject({ prefix: z.string().regex(PREFIX_RE, 'must be up to 256 chars of [A-Za-z0-9._:/-] ("" = every name)'), allow: z.array(z.enum(RIGHTS)).min(1) })).max(1000),
      }),
    )
    .max(100_000),
});

export interface TokenRule {
  prefix: string;
  allow: ReadonlySet<Right>;
}
export interface TokenEntry {
  name: string;
  rules: readonly TokenRule[];
}

/** hex SHA-256 of a token: what tokens.json stores (`raftlock` docs: `printf %s TOKEN | sha256sum`) */
export function sha256Hex(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export class TokenStore {
  private constructor(
    private readonly byHash: ReadonlyMap<string, TokenEntry>,
    private readonly byName: ReadonlyMap<string, TokenEntry>,
  ) {}

  get size(): number {
    return this.byHash.size;
  }

  /** Parse and validate tokens.json's content; throws TokensFileError naming the field. */
  static parse(json: unknown, file = 'tokens.json'): TokenStore {
    const r = fileSchema.safeParse(json, { reportInput: true });
    if (!r.success) throw new TokensFileError(`${file}: ${zodErrorText(r.error)}`);
    const byHash = new Map<string, TokenEntry>();
    const byName = new Map<string, TokenEntry>();
    for (const [i, t] of r.data.tokens.entries()) {
      const hash = t.sha256.toLowerCase();
      if (byName.has(t.name)) throw new TokensFileError(`${file}: tokens[${i}].name: duplicate token name "${t.name}"`);
      if (byHash.has(hash)) throw new TokensFileError(`${file}: tokens[${i}].sha256: the same token hash is listed twice (${byHash.get(hash)?.name} and ${t.name})`);
      const rules = t.rights.map((rule) => ({ prefix: rule.prefix, allow: new Set(rule.allow.flatMap((a) => IMPLIED[a])) }));
      const entry = { name: t.name, rules };
      byHash.set(hash, entry);
      byName.set(t.name, entry);
    }
    return new TokenStore(byHash, byName);
  }

  static load(file: string): TokenStore {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new TokensFileError(`${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { cause: err });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new TokensFileError(`${file}: invalid JSON: ${(err as Error).message}`, { cause: err });
    }
    return TokenStore.parse(json, file);
  }

  /** The token behind an Authorization header, or ApiError 401. */
  authenticate(header: string | undefined): TokenEntry {
    if (header === undefined || header === '') throw new ApiError('unauthenticated', 'missing Authorization: Bearer <token> header');
    const m = /^Bearer +(\S+) *$/i.exec(header);
    if (!m || !TOKEN_RE.test(m[1] as string)) throw new ApiError('unauthenticated', 'the Authorization header must be "Bearer <token>"');
    const t = this.byHash.get(sha256Hex(m[1] as string));
    if (!t) throw new ApiError('unauthenticated', 'unknown bearer token');
    return t;
  }

  /** Does token `name` have `right` on `lockName`? With no name: `admin` needs prefix ""
   *  (cluster-wide), `read`/`lock` need the right on some prefix. */
  allows(name: string, right: Right, lockName?: string): boolean {
    const t = this.byName.get(name);
    return t !== undefined && entryAllows(t, right, lockName);
  }

  /** The Authorizer hook of the REST server: principal = token name. */
  authorizer(): Authorizer {
    return ({ authorization, right, name }) => {
      const t = this.authenticate(authorization);
      if (!entryAllows(t, right, name)) {
        const what = name === undefined ? (right === 'admin' ? 'cluster operations (admin on prefix "")' : `"${right}"`) : `"${right}" on ${name === '' ? 'every lock name (prefix "")' : JSON.stringify(name)}`;
        throw new ApiError('permission_denied', `token "${t.name}" has no right to ${what}`);
      }
      return t.name;
    };
  }
}

function entryAllows(t: TokenEntry, right: Right, lockName: string | undefined): boolean {
  for (const r of t.rules) {
    if (!r.allow.has(right)) continue;
    if (lockName === undefined ? right !== 'admin' || r.prefix === '' : lockName.startsWith(r.prefix)) return true;
  }
  return false;
}
