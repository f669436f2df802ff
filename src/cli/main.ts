// Placeholder until the node process exists (issue 5 replaces it).
export async function main(_argv: string[]): Promise<void> {
  console.error('raftlock: the node process is not built yet; see the README.');
  process.exitCode = 1;
}
