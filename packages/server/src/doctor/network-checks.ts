import { join } from 'node:path';
import { uplinkOf, uplinkForwardingWarning } from '../node/network/uplink-forwarding.js';
import { finding, type HostCheck } from './host-check.js';
import { blocks, parseListeners } from './proc-net-tcp.js';

/** What egress sandboxes need of the host's routing (the daemon turns forwarding on at start unless told to leave it, node.ts). */
export const forwardingCheck: HostCheck = async ({ host, config }) => {
  const proc = join(host.root, '/proc');
  const uplink = await uplinkOf(proc);
  if (!uplink) return finding('forwarding', 'warn', 'no IPv4 default route: sandboxes with network "egress" reach nothing outside the host', 'give the host a default route (its uplink)');
  const warning = await uplinkForwardingWarning(proc);
  if (!warning) return finding('forwarding', 'ok', `the uplink ${uplink} forwards IPv4`);
  if (config.net.hostForwarding === 'enable') return finding('forwarding', 'ok', `the uplink ${uplink} does not forward IPv4 now; forkd serve turns it on at start (as Docker does)`);
  return finding('forwarding', 'warn', `${warning.replace(/; set .*/, '')} (FORKD_HOST_FORWARDING=leave)`, `sysctl -w net.ipv4.conf.${uplink}.forwarding=1 (and in /etc/sysctl.d/ to keep it), or unset FORKD_HOST_FORWARDING for forkd to turn it on`);
};

/** The ports `forkd serve` listens on: free, or held by the forkd that answers its health check. */
export const portsCheck: HostCheck = async (ctx) => {
  const { config, host } = ctx;
  const named: [string, number | null][] = [['FORKD_PORT', config.port], ['FORKD_E2B_API_PORT', config.e2bApiPort], ['FORKD_E2B_ENVD_PORT', config.e2bEnvdPort]];
  const wanted = named.filter((p): p is [string, number] => typeof p[1] === 'number' && p[1] > 0);
  const listeners = [...parseListeners((await host.read('/proc/net/tcp')) ?? ''), ...parseListeners((await host.read('/proc/net/tcp6')) ?? '')];
  const busy = wanted.filter(([, port]) => listeners.some((l) => blocks(l, config.host, port)));
  const list = (ps: readonly (readonly [string, number])[]) => ps.map(([name, port]) => `${port} (${name})`).join(', ');
  if (!busy.length) return finding('ports', 'ok', `${list(wanted)} free on ${config.host}`);
  if ((await ctx.health()).kind === 'healthy') return finding('ports', 'ok', `${list(busy)} in use by the running forkd`);
  return finding('ports', 'error', `${list(busy)} in use by another program: forkd serve cannot listen there`, `stop it (ss -ltnp shows which) or set ${busy.map(([name]) => name).join(' / ')} to a free port`);
};
