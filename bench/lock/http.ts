// The load generator's HTTP client: one undici Pool per server, with one keep-alive
// connection per benchmark client (one request in flight per client, as the issue asks),
// JSON in and out. It is deliberately thin: every microsecond the generator spends here is
// taken from the same two cores the servers under test run on.
import { Pool } from 'undici';

export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly text: string,
  ) {
    super(`HTTP ${status} ${code}: ${text.slice(0, 200)}`);
  }
}

const JSON_HEADERS = { 'content-type': 'application/json' };

export class JsonHttp {
  private readonly pool: Pool;

  constructor(
    readonly origin: string,
    connections: number,
  ) {
    this.pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
  }

  /** Send one request; resolves with the parsed body on 2xx, throws HttpStatusError otherwise. */
  async call(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, headers?: Record<string, string>): Promise<unknown> {
    const res = await this.pool.request(
      body === undefined ? { method, path, ...(headers ? { headers } : {}) } : { method, path, headers: headers ? { ...JSON_HEADERS, ...headers } : JSON_HEADERS, body: JSON.stringify(body) },
    );
    const text = await res.body.text();
    if (res.statusCode >= 200 && res.statusCode < 300) return text ? JSON.parse(text) : undefined;
    let code = 'http_error';
    try {
      const parsed = JSON.parse(text) as { error?: { code?: string } | string; code?: number };
      if (typeof parsed.error === 'object' && parsed.error?.code) code = parsed.error.code;
      else if (typeof parsed.error === 'string') code = parsed.error.slice(0, 60);
    } catch {
      /* not JSON */
    }
    throw new HttpStatusError(res.statusCode, code, text);
  }

  /** GET a text resource (a /metrics page) */
  async text(path: string): Promise<string> {
    const res = await this.pool.request({ method: 'GET', path });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new HttpStatusError(res.statusCode, 'http_error', text);
    return text;
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => undefined);
  }
}
