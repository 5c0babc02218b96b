import type { ProcessExit } from '@forkd/sdk';

/** The shell's convention: the exit code, or 128+N for death by signal N. Notes an OOM kill on stderr. */
export function exitStatus(exit: ProcessExit, stderr: { write(s: string): unknown } = process.stderr): number {
  if (exit.oomKilled) stderr.write('OOM killed\n');
  return exit.signal ? 128 + exit.signal : exit.exitCode;
}
