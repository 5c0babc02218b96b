import { finding, type HostCheck } from './host-check.js';

/** GET /v1/health of the daemon the CLI would talk to. Not running is no fault of the host's: a warning. */
export const daemonCheck: HostCheck = async ({ daemonUrl, health }) => {
  const h = await health();
  switch (h.kind) {
    case 'healthy':
      return finding('daemon', 'ok', `forkd at ${daemonUrl} is healthy`);
    case 'down':
      return finding('daemon', 'warn', `no forkd answers at ${daemonUrl} (${h.detail})`, 'start it (forkd serve), or set FORKD_URL to where it runs');
    case 'unhealthy':
      return finding('daemon', 'error', `forkd at ${daemonUrl} is unhealthy (503: ${h.detail})`, 'read its log: its database does not answer');
    case 'foreign':
      return finding('daemon', 'error', `something other than forkd answers at ${daemonUrl} (${h.detail})`, 'set FORKD_URL to forkd\'s address, or FORKD_PORT to a free port');
  }
};
