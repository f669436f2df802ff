#!/usr/bin/env node
// The `raftlock` command. Sources are compiled to dist/ by `npm ci` (the prepare script).
import('../dist/src/cli/main.js').then((m) => m.main(process.argv.slice(2))).catch((err) => {
  console.error(`raftlock: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
