// A lock server stand-in for SDK tests of what a failed acquire leaves behind: it keeps
// sessions, holders and queued waits, answers release as the real server does (a release
// without a token by a queued session withdraws its wait: docs/api.md "Release"), and
// lets a test choose how an acquire is answered — granted later, granted but answered
// late, granted and answered 504, granted and the connection dropped, refused. It never
// cancels a wait when the client goes away (that cancel can lose the race on a real one).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, afterEach, before } from 'node:test';
import { RaftlockClient } from '@raftlock/client';

export type AcquireMode =
  /** queue the session and grant it `delayMs` after the request (unless withdrawn) */
  | { kind: 'grant-later'; delayMs: number }
  /** grant at once, answer `delayMs` later */
  | { kind: 'answer-late'; delayMs: number }
  /** grant at once, answer 504 (outcome unknown) */
  | { kind: 'apply-then-504' }
  /** grant at once, then destroy the connection without an answer */
  | { kind: 'apply-then-drop' }
  /** answer with this status and code, applying nothing */
  | { kind: 'refuse'; status: number; code: string };

export interface Logged {
  method: string;
  url: string;
  body: Record<string, unknown>;
}

/** A stub semaphore: its limit and its holders' permits (docs/contract.md §4 "Semaphores"). */
export interface StubSemaphore {
  limit: number;
  holders: Map<string, { permits: number; token: number }>;
  /** sessions queued by 'grant-later', with the permits they asked for */
  waits: Map<string, number>;
}

export class StubLockServer {
  acquireMode: AcquireMode = { kind: 'grant-later', delayMs: 300 };
  /** how semaphore acquires are answered: 'serve' grants what fits and answers
   *  semaphore_full / limit_mismatch at once (no waiting), or one of the AcquireModes */
  semMode: AcquireMode | { kind: 'serve' } = { kind: 'serve' };
  readonly sems = new Map<string, StubSemaphore>();
  /** every semaphore grant made (not a holder's repeated acquire), in order: a grant the
   *  SDK releases again at once is gone from `sems` before a poll could see it */
  readonly semGrantLog: { name: string; sessionId: string; token: number }[] = [];
  /** answer this many release requests 500 before serving them */
  failReleases = 0;
  readonly log: Logged[] = [];
  readonly holders = new Map<string, { sessionId: string; token: number }>();
  readonly waits = new Map<string, Set<string>>();
  readonly sessions = new Set<string>();
  private nextToken = 1;
  private nextSession = 1;
  private readonly timers = new Set<NodeJS.Timeout>();
  private server: Server | undefined;
  url = '';

  static async start(): Promise<StubLockServer> {
    const s = new StubLockServer();
    s.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => s.handle(req, res, body));
    });
    s.server.keepAliveTimeout = 100;
    await new Promise<void>((r) => s.server!.listen(0, '127.0.0.1', r));
    const addr = s.server.address();
    s.url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    return s;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  semReleases(name: string): Logged[] {
    return this.log.filter((l) => l.method === 'POST' && l.url === `/v1/semaphores/${name}/release`);
  }

  /** permits in use of semaphore `name` */
  inUse(name: string): number {
    let n = 0;
    for (const h of this.sems.get(name)?.holders.values() ?? []) n += h.permits;
    return n;
  }

  releases(name: string): Logged[] {
    return this.log.filter((l) => l.method === 'POST' && l.url === `/v1/locks/${name}/release`);
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private grant(name: string, sessionId: string): { name: string; session_id: string; fencing_token: number; ttl_ms: number } {
    const h = this.holders.get(name);
    if (!h || h.sessionId !== sessionId) this.holders.set(name, { sessionId, token: this.nextToken++ });
    return { name, session_id: sessionId, fencing_token: this.holders.get(name)!.token, ttl_ms: 60_000 };
  }

  private handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
    const url = req.url ?? '';
    this.log.push({ method: req.method ?? '', url, body });
    const send = (status: number, b: unknown): void => {
      if (res.destroyed || res.writableEnded) return;
      res.writeHead(status, { 'content-type': 'application/json', ...(status === 503 ? { 'retry-after': '1' } : {}) });
      res.end(JSON.stringify(b));
    };
    const err = (status: number, code: string): void => send(status, { error: { code, message: code } });
    if (req.method === 'POST' && url === '/v1/sessions') {
      const id = `s${this.nextSession++}`;
      this.sessions.add(id);
      return send(201, { session_id: id, ttl_ms: Number(body.ttl_ms ?? 60_000) });
    }
    const ka = /^\/v1\/sessions\/([^/]+)\/keepalive$/.exec(url);
    if (ka) return this.sessions.has(ka[1]!) ? send(200, { session_id: ka[1], ttl_ms: 60_000 }) : err(404, 'session_not_found');
    const del = /^\/v1\/sessions\/([^/]+)$/.exec(url);
    if (del && req.method === 'DELETE') {
      const sid = del[1]!;
      this.sessions.delete(sid);
      const released: string[] = [];
      for (const [n, h] of this.holders) {
        if (h.sessionId !== sid) continue;
        this.holders.delete(n);
        released.push(n);
      }
      for (const w of this.waits.values()) w.delete(sid);
      for (const sem of this.sems.values()) {
        sem.holders.delete(sid);
        sem.waits.delete(sid);
      }
      return send(200, { released });
    }
    const sm = /^\/v1\/semaphores\/([^/]+)\/(acquire|release)$/.exec(url);
    if (sm) return this.handleSemaphore(decodeURIComponent(sm[1]!), sm[2]!, body, res, send, err);
    const m = /^\/v1\/locks\/([^/]+)\/(acquire|release)$/.exec(url);
    if (!m) return err(404, 'not_found');
    const name = decodeURIComponent(m[1]!);
    const sid = String(body.session_id);
    if (!this.sessions.has(sid)) return err(404, 'session_not_found');
    if (m[2] === 'release') {
      if (this.failReleases > 0) {
        this.failReleases--;
        return err(500, 'internal');
      }
      const h = this.holders.get(name);
      if (h && h.sessionId === sid && (body.fencing_token === undefined || body.fencing_token === h.token)) {
        this.holders.delete(name);
        return send(200, { name, released: true });
      }
      if (body.fencing_token === undefined) this.waits.get(name)?.delete(sid);
      return err(409, 'not_holder');
    }
    const mode = this.acquireMode;
    switch (mode.kind) {
      case 'grant-later': {
        let w = this.waits.get(name);
        if (!w) this.waits.set(name, (w = new Set()));
        w.add(sid);
        return this.later(mode.delayMs, () => {
          if (!this.waits.get(name)?.delete(sid)) return err(409, 'lock_held');
          send(200, this.grant(name, sid));
        });
      }
      case 'answer-late': {
        const g = this.grant(name, sid);
        return this.later(mode.delayMs, () => send(200, g));
      }
      case 'apply-then-504':
        this.grant(name, sid);
        return err(504, 'timeout');
      case 'apply-then-drop':
        this.grant(name, sid);
        res.socket?.destroy();
        return;
      case 'refuse':
        return err(mode.status, mode.code);
    }
  }

  private semGrant(name: string, sid: string, limit: number, permits: number): Record<string, unknown> {
    let sem = this.sems.get(name);
    if (!sem) this.sems.set(name, (sem = { limit, holders: new Map(), waits: new Map() }));
    // as the real server: a holder's second acquire is the same grant (same permits, token)
    let h = sem.holders.get(sid);
    if (!h) {
      h = { permits, token: this.nextToken++ };
      this.semGrantLog.push({ name, sessionId: sid, token: h.token });
    }
    sem.holders.set(sid, h);
    return { name, session_id: sid, permits: h.permits, limit: sem.limit, fencing_token: h.token, ttl_ms: 60_000 };
  }

  /** As a server of an earlier version: a release gives back the session's permits and
   *  does NOT withdraw a queued wait (this version's server does: docs/api.md "Release"),
   *  the harder case for the SDK's cleanup. */
  private handleSemaphore(name: string, action: string, body: Record<string, unknown>, res: ServerResponse, send: (status: number, b: unknown) => void, err: (status: number, code: string) => void): void {
    const sid = String(body.session_id);
    if (!this.sessions.has(sid)) return err(404, 'session_not_found');
    const sem = this.sems.get(name);
    if (action === 'release') {
      if (this.failReleases > 0) {
        this.failReleases--;
        return err(500, 'internal');
      }
      if (!sem?.holders.delete(sid)) return err(409, 'not_holder');
      if (sem.holders.size === 0 && sem.waits.size === 0) this.sems.delete(name);
      return send(200, { name, released: true });
    }
    const limit = Number(body.limit);
    const permits = Number(body.permits ?? 1);
    const mode = this.semMode;
    switch (mode.kind) {
      case 'serve': {
        if (sem?.holders.has(sid)) return send(200, this.semGrant(name, sid, limit, permits));
        if (sem && sem.limit !== limit) return send(409, { error: { code: 'limit_mismatch', message: `the semaphore's limit is ${sem.limit}`, limit: sem.limit } });
        const used = this.inUse(name);
        if (used + permits > limit) return send(409, { error: { code: 'semaphore_full', message: 'full', in_use: used, limit } });
        return send(200, this.semGrant(name, sid, limit, permits));
      }
      case 'grant-later': {
        let s2 = sem;
        if (!s2) this.sems.set(name, (s2 = { limit, holders: new Map(), waits: new Map() }));
        s2.waits.set(sid, permits);
        const q = s2;
        return this.later(mode.delayMs, () => {
          if (!q.waits.delete(sid)) return err(409, 'semaphore_full');
          send(200, this.semGrant(name, sid, limit, permits));
        });
      }
      case 'answer-late': {
        const g = this.semGrant(name, sid, limit, permits);
        return this.later(mode.delayMs, () => send(200, g));
      }
      case 'apply-then-504':
        this.semGrant(name, sid, limit, permits);
        return err(504, 'timeout');
      case 'apply-then-drop':
        this.semGrant(name, sid, limit, permits);
        res.socket?.destroy();
        return;
      case 'refuse':
        return err(mode.status, mode.code);
    }
  }
}

/** The stub for a describe block of SDK tests: started before its tests, closed after them;
 *  `connect` makes the client of one test (closed after it, when `reset` runs too), its
 *  warnings collected in `warnings` (emptied after each test). */
export function stubSuite(reset: (stub: StubLockServer) => void = () => undefined): {
  readonly stub: StubLockServer;
  readonly warnings: string[];
  connect(o?: { retryBudgetMs?: number }): RaftlockClient;
} {
  let stub: StubLockServer | undefined;
  let client: RaftlockClient | undefined;
  const warnings: string[] = [];
  before(async () => {
    stub = await StubLockServer.start();
  });
  after(async () => {
    await stub?.close();
  });
  afterEach(async () => {
    await client?.close();
    if (stub) reset(stub);
    warnings.length = 0;
  });
  const current = (): StubLockServer => {
    if (stub === undefined) throw new Error('the stub runs only inside its describe block\'s tests');
    return stub;
  };
  return {
    get stub() {
      return current();
    },
    warnings,
    connect: (o = {}) => (client = new RaftlockClient({ endpoints: [current().url], timeoutMs: 2000, retryBudgetMs: o.retryBudgetMs ?? 2000, onWarning: (m) => warnings.push(m) })),
  };
}
