import { DoctorReport, type DoctorFinding } from '@forkd/protocol';
import type { ForkdConfig } from '../shared/config.js';
import { cgroupCheck, cgroupDynmodsCheck, cgroupParentCheck } from './cgroup-check.js';
import { clockCheck } from './clock-check.js';
import { daemonCheck } from './daemon-check.js';
import type { DoctorContext, HostCheck } from './host-check.js';
import { hostView, type HealthAnswer, type HostView } from './host-view.js';
import { btrfsCheck, idmappedMountsCheck, kernelCheck, loopDevicesCheck, seccompCheck, userfaultfdCheck, userNamespacesCheck } from './kernel-checks.js';
import { forwardingCheck, portsCheck } from './network-checks.js';
import { poolCheck, poolLayoutCheck, poolSpaceCheck, quotaModeCheck } from './pool-checks.js';
import { criuCheck, runcCheck } from './tool-checks.js';
import { snapshotsCheck } from './snapshot-check.js';
import { stagingPagesCheck } from './staging-check.js';

/** In the order `forkd doctor` prints them: the kernel, forkd's tools, the pool, the network, the daemon. */
export const HOST_CHECKS: readonly [string, HostCheck][] = [
  ['kernel', kernelCheck],
  ['user-namespaces', userNamespacesCheck],
  ['idmapped-mounts', idmappedMountsCheck],
  ['userfaultfd', userfaultfdCheck],
  ['cgroups', cgroupCheck],
  ['cgroup-migrations', cgroupDynmodsCheck],
  ['staging-pages', stagingPagesCheck],
  ['cgroup-parent', cgroupParentCheck],
  ['seccomp', seccompCheck],
  ['btrfs', btrfsCheck],
  ['loop-devices', loopDevicesCheck],
  ['criu', criuCheck],
  ['runc', runcCheck],
  ['pool', poolCheck],
  ['pool-space', poolSpaceCheck],
  ['quota-mode', quotaModeCheck],
  ['pool-layout', poolLayoutCheck],
  ['snapshots', snapshotsCheck],
  ['forwarding', forwardingCheck],
  ['clock', clockCheck],
  ['ports', portsCheck],
  ['daemon', daemonCheck],
];

export interface DoctorOptions {
  /** The host to check (default the real one, `/`). */
  host?: HostView;
  /** Default FORKD_URL, else the configured API address. */
  daemonUrl?: string;
}

/** The API address a local CLI reaches (a wildcard listen address is reached on loopback). */
export function localApiUrl(config: ForkdConfig): string {
  const host = ['0.0.0.0', '::', ''].includes(config.host) ? '127.0.0.1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

/** Runs every host check (each on its own: one that throws is an error finding, the rest still run). */
export async function runDoctor(config: ForkdConfig, opts: DoctorOptions = {}): Promise<DoctorReport> {
  const host = opts.host ?? hostView();
  const daemonUrl = opts.daemonUrl ?? (process.env.FORKD_URL || localApiUrl(config));
  let asked: Promise<HealthAnswer> | undefined;
  const ctx: DoctorContext = { host, config, daemonUrl, health: () => (asked ??= host.health(daemonUrl)) };
  const findings = await Promise.all(
    HOST_CHECKS.map(([id, check]): Promise<DoctorFinding> =>
      check(ctx).catch((err: unknown) => ({ check: id, status: 'error', summary: `the check failed: ${err instanceof Error ? err.message : String(err)}`, fix: 'report this as a forkd bug' })),
    ),
  );
  const count = (s: DoctorFinding['status']) => findings.filter((f) => f.status === s).length;
  return DoctorReport.parse({ ok: count('error') === 0, errors: count('error'), warnings: count('warn'), findings });
}
