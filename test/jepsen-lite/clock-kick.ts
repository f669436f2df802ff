// Preloaded (`node --import`) into every node of a run with clock faults (clock.ts): reads
// the wall clock every 50 ms. libfaketime's FAKETIME_XRESET rebases a changed rate on the
// CLOCK_REALTIME path, and a process that only reads CLOCK_MONOTONIC after a change sees
// its timers crawl or stall until it does (measured, libfaketime 0.9.10). Unref'd: it
// never keeps a node alive.
setInterval(() => Date.now(), 50).unref();
