// Polling for a condition the test can read synchronously (a stub server's log, a clock):
// the tests never sleep a fixed time to wait for one (BRIEF "no sleep to wait").

/** poll until `cond` holds or fail after `ms` */
export async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
