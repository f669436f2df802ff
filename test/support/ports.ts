// Ports for test servers. A port found free by binding port 0 comes from the kernel's
// ephemeral range, the same range every outgoing connection on the machine takes its
// local port from: between our check and the node's own bind, a test running alongside
// can open a connection from it, and the node dies with EADDRINUSE. So tests pick ports
// below the ephemeral range (where outgoing connections never land), at random, and
// check that nothing listens there now. Ports 7001–7003 (`npm start`) are never chosen.
//
// `npm test` runs test files in parallel (scripts/run-tests.mjs), and a cluster asks for all
// its ports before any node binds one, so "nothing listens there now" is not enough across
// processes: each port handed out is also claimed by a file in a directory every test
// process shares (created exclusively, holding the claimant's pid). A claim whose process is
// gone is taken over; this process's claims are removed when it exits.
import { mkdirSync, openSync, closeSync, writeSync, readFileSync, unlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOW = 20_000;

/** the first port of the kernel's ephemeral range (Linux: ip_local_port_range) */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > LOW + 1000) return first;
  } catch {
    // not Linux: the IANA range starts at 49152
  }
  return 49_152;
}

const HIGH = ephemeralStart();
/** ports this process has handed out: a cluster asks for several before any node binds
 *  one, so a port that is still free must not be given twice */
const given = new Set<number>();

const CLAIMS = join(tmpdir(), 'raftlock-test-ports');
const claimed: string[] = [];
process.once('exit', () => {
  for (const f of claimed) {
    try {
      unlinkSync(f);
    } catch {
      // already gone: nothing to undo
    }
  }
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** claim `port` for this process across every test process on the machine; false when a
 *  live process holds it */
function claim(port: number): boolean {
  mkdirSync(CLAIMS, { recursive: true });
  const file = join(CLAIMS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      claimed.push(file);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder = NaN;
      try {
        holder = Number(readFileSync(file, 'utf8'));
      } catch {
        // removed in between: try again
      }
      if (Number.isInteger(holder) && holder > 0 && alive(holder)) return false;
      try {
        unlinkSync(file); // a claim left by a process that died (or a half-written one)
      } catch {
        // another process took it over first; the exclusive create decides
      }
    }
  }
  return false;
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on, outside the ephemeral range, never the same twice
 *  in one process, and claimed against every other test process on the machine. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (given.has(port)) continue;
    if (!claim(port)) continue;
    if (await bindable(port, host)) {
      given.add(port);
      return port;
    }
  }
  throw new Error(`no free port found in ${LOW}–${HIGH - 1} after 200 tries`);
}
