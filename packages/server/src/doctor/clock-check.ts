import { finding, type HostCheck } from './host-check.js';

/** Programs that keep the clock synchronized (comm is cut at 15 characters: systemd-timesyncd's is `systemd-timesyn`). */
const SYNC_DAEMONS = ['chronyd', 'ntpd', 'openntpd', 'systemd-timesyn', 'timemaster', 'ptp4l'];

/**
 * Cheaply known only: systemd-timesyncd's flag file, or a sync daemon
 * running. The kernel's own sync state (adjtimex) is not readable from /proc.
 */
export const clockCheck: HostCheck = async ({ host }) => {
  if ((await host.presence('/run/systemd/timesync/synchronized')) === 'present') return finding('clock', 'ok', 'synchronized (systemd-timesyncd)');
  for (const pid of (await host.list('/proc')).filter((p) => /^\d+$/.test(p))) {
    const comm = (await host.read(`/proc/${pid}/comm`))?.trim();
    if (comm && SYNC_DAEMONS.includes(comm)) return finding('clock', 'ok', `${comm} keeps it synchronized`);
  }
  const source = (await host.read('/sys/devices/system/clocksource/clocksource0/current_clocksource'))?.trim();
  return finding('clock', 'warn', `no time synchronization found (no chronyd, ntpd or systemd-timesyncd; clock source ${source ?? 'unknown'})`, 'install chrony or enable systemd-timesyncd: snapshot times, key and token expiry, TLS and S3 request signatures need a right clock');
};
