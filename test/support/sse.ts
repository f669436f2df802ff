// A minimal reader of a server-sent-events response for tests: the text accumulates, and
// `until` polls it with a deadline (no sleeps standing in for conditions).
import http from 'node:http';

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  res: http.IncomingMessage;
  text(): string;
  until(want: RegExp | string, ms?: number): Promise<string>;
  /** resolves when the response ends or the socket closes */
  ended: Promise<void>;
  close(): void;
}

export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('error', () => undefined);
      const ended = new Promise<void>((r) => res.once('close', () => r()));
      resolve({
        status: res.statusCode ?? 0, headers: res.headers, res, ended, text: () => text, close: () => req.destroy(),
        async until(want, ms = 5000) {
          const deadline = Date.now() + ms;
          while (!(typeof want === 'string' ? text.includes(want) : want.test(text))) {
            if (Date.now() > deadline) throw new Error(`${url}: the stream never showed ${String(want)}; its tail: ${JSON.stringify(text.slice(-600))}`);
            await new Promise((r) => setTimeout(r, 20));
          }
          return text;
        },
      });
    });
    req.on('error', reject);
  });
}

export interface SseFrame { id?: string; event?: string; data?: Record<string, unknown> }

/** SSE text → frames (comment frames dropped; a trailing partial frame is left out) */
export function sseFrames(text: string): SseFrame[] {
  const blocks = text.split('\n\n');
  blocks.pop(); // after the last blank line: incomplete or empty
  return blocks.filter((b) => b.trim() !== '' && !b.startsWith(':')).map((b) => {
    const f: SseFrame = {};
    for (const line of b.split('\n')) {
      const i = line.indexOf(': ');
      const k = line.slice(0, i);
      const v = line.slice(i + 2);
      if (k === 'id') f.id = v;
      else if (k === 'event') f.event = v;
      else if (k === 'data') f.data = JSON.parse(v) as Record<string, unknown>;
    }
    return f;
  });
}
