// The raftlock package version, for backup metadata and the OpenAPI document. Found by
// walking up from this module (it runs from src/ under tsx and from dist/src/ when built).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

export function raftlockVersion(): string {
  if (cached !== undefined) return cached;
  cached = 'unknown';
  for (let d = dirname(fileURLToPath(import.meta.url)); d !== dirname(d); d = dirname(d)) {
    const p = join(d, 'package.json');
    if (!existsSync(p)) continue;
    try {
      const pkg = JSON.parse(readFileSync(p, 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'raftlock' && typeof pkg.version === 'string') {
        cached = pkg.version;
        break;
      }
    } catch {
      /* keep looking */
    }
  }
  return cached;
}
