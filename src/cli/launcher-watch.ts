// A node started by `raftlock cluster` stops when that command is gone. The command stops
// its nodes on Ctrl-C, SIGTERM and SIGHUP; this covers what it cannot catch (SIGKILL, a
// crash, an OOM kill), after which the nodes would otherwise keep their ports and data
// directories, and the next `npm start` would find them taken.
//
// The launcher passes its pid in RAFTLOCK_LAUNCHER_PID; a child whose parent dies is
// re-parented (to init or a subreaper), so its parent pid changes.

export const LAUNCHER_PID_ENV = 'RAFTLOCK_LAUNCHER_PID';

/** how often a launched node looks for its launcher */
export const LAUNCHER_CHECK_MS = 500;

/** Calls `onGone` once when this process's parent is no longer the launcher named in
 *  the environment; does nothing for a node not started by `raftlock cluster`. The timer
 *  does not keep the process alive. */
export function watchLauncher(onGone: (launcherPid: number) => void, env: NodeJS.ProcessEnv = process.env, parentPid: () => number = () => process.ppid): NodeJS.Timeout | null {
  const raw = env[LAUNCHER_PID_ENV];
  if (raw === undefined || !/^[1-9]\d*$/.test(raw)) return null;
  const launcher = Number(raw);
  const timer = setInterval(() => {
    if (parentPid() === launcher) return;
    clearInterval(timer);
    onGone(launcher);
  }, LAUNCHER_CHECK_MS);
  timer.unref();
  return timer;
}
