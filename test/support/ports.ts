// Ports for test servers. A port found free by binding port 0 comes from the kernel's
// ephemeral range, the same range every outgoing connection on the machine takes its
// local port from: between our check and the node's own bind, a test running alongside
// can open a connection from it, and the node dies with EADDRINUSE. So tests pick ports
// below the ephemeral range (where outgoing connections never land), at random, and
// check that nothing listens there now. Ports 7001–7003 (`npm start`) are never chosen.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

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

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on, outside the ephemeral range, never the same twice
 *  in one process. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (given.has(port)) continue;
    if (await bindable(port, host)) {
      given.add(port);
      return port;
    }
  }
  throw new Error(`no free port found in ${LOW}–${HIGH - 1} after 200 tries`);
}
