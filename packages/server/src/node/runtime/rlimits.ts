import { readFileSync } from 'node:fs';

/** An OCI `process.rlimits` entry. */
export interface Rlimit {
  type: 'RLIMIT_CORE' | 'RLIMIT_NOFILE' | 'RLIMIT_NPROC';
  soft: number;
  hard: number;
}

/** The daemon's own hard limits (Infinity: unlimited); runc can only lower limits here (no CAP_SYS_RESOURCE). */
export interface HostLimits {
  nofile: number;
  nproc: number;
}

/** Open files a sandbox process may have: enough for servers and build tools, well below the host's file table. */
export const SANDBOX_NOFILE = 65_536;
/** The largest pids limit a sandbox may have (protocol's Pids maximum): its cgroup's pids limit is the real bound. */
export const SANDBOX_NPROC = 65_536;

/** Reads the daemon's hard limits from /proc/self/limits (Node has no getrlimit). */
export function readHostLimits(text = readFileSync('/proc/self/limits', 'utf8')): HostLimits {
  const hard = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(name));
    const v = line?.slice(name.length).trim().split(/\s+/)[1];
    if (v === undefined) throw new Error(`no "${name}" in /proc/self/limits`);
    return v === 'unlimited' ? Infinity : Number(v);
  };
  return { nofile: hard('Max open files'), nproc: hard('Max processes') };
}

/**
 * Every sandbox process starts with these (the agent is PID 1 and its
 * children inherit them). RLIMIT_CORE 0/0: no core file is written, neither
 * in the sandbox's files (which live on the host's pool) nor to a host
 * `core_pattern` file path; hard 0, and the sandbox has no CAP_SYS_RESOURCE
 * in the host's namespace, so `ulimit -c unlimited` inside fails. nofile and
 * nproc are sane caps never above the daemon's own hard limits: without
 * CAP_SYS_RESOURCE runc cannot raise a limit, and a start asking it to fails.
 */
export function sandboxRlimits(host: HostLimits): Rlimit[] {
  const nofile = Math.min(SANDBOX_NOFILE, host.nofile);
  const nproc = Math.min(SANDBOX_NPROC, host.nproc);
  return [
    { type: 'RLIMIT_CORE', soft: 0, hard: 0 },
    { type: 'RLIMIT_NOFILE', soft: nofile, hard: nofile },
    { type: 'RLIMIT_NPROC', soft: nproc, hard: nproc },
  ];
}
