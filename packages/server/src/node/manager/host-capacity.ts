import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** What the host has for sandboxes: its memory and CPUs. */
export interface HostCapacity {
  memoryMb: number;
  cpus: number;
}

/** MemTotal from /proc/meminfo (os.totalmem is the same number, but a cgroup-limited daemon should see its host's). */
export function parseMemTotalMb(meminfo: string): number {
  const kb = /^MemTotal:\s+(\d+)\s+kB/m.exec(meminfo)?.[1];
  if (!kb) throw new Error('no MemTotal in /proc/meminfo');
  return Math.floor(Number(kb) / 1024);
}

export function readHostCapacity(): HostCapacity {
  return { memoryMb: parseMemTotalMb(readFileSync('/proc/meminfo', 'utf8')), cpus: availableParallelism() };
}
