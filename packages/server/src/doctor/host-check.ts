import type { DoctorFinding, DoctorStatus } from '@forkd/protocol';
import type { ForkdConfig } from '../shared/config.js';
import type { HealthAnswer, HostView } from './host-view.js';

/** What every host check gets: the host (or a fake of it) and forkd's configuration. */
export interface DoctorContext {
  host: HostView;
  config: ForkdConfig;
  /** The daemon's URL (FORKD_URL, else the configured host and port). */
  daemonUrl: string;
  /** That daemon's health, asked once (the daemon and ports checks both need it). */
  health(): Promise<HealthAnswer>;
}

/** One check of the host: one finding, never a throw (run-doctor turns a throw into an error finding all the same). */
export type HostCheck = (ctx: DoctorContext) => Promise<DoctorFinding>;

export function finding(check: string, status: DoctorStatus, summary: string, fix?: string): DoctorFinding {
  return fix === undefined || status === 'ok' ? { check, status, summary } : { check, status, summary, fix };
}

/** [major, minor] of the running kernel (/proc/sys/kernel/osrelease), undefined when unreadable. */
export async function kernelVersion(host: HostView): Promise<{ release: string; major: number; minor: number } | undefined> {
  const release = (await host.read('/proc/sys/kernel/osrelease'))?.trim();
  const m = release && /^(\d+)\.(\d+)/.exec(release);
  return m ? { release: release!, major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

export function kernelAtLeast(k: { major: number; minor: number }, major: number, minor: number): boolean {
  return k.major > major || (k.major === major && k.minor >= minor);
}
