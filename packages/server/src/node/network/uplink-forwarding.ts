import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Why egress would half-work on this host, or undefined. Replies to a
 * sandbox's forwarded (non-proxied) connections come in on the uplink and
 * are forwarded only if the uplink forwards; forkd turns forwarding on for
 * its own veths but leaves the host's uplink to its admin (turning a host
 * into a router is theirs to decide), so it says so at start instead.
 * `proc` is /proc (a directory of the same shape in tests).
 */
export async function uplinkForwardingWarning(proc = '/proc'): Promise<string | undefined> {
  const routes = await readFile(join(proc, 'net/route'), 'utf8').catch(() => '');
  // Default routes: destination and mask 0; the lowest metric wins.
  const defaults = routes
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[1] === '00000000' && f[7] === '00000000' && f[0])
    .sort((a, b) => Number(a[6]) - Number(b[6]));
  const uplink = defaults[0]?.[0];
  if (!uplink || !/^[\w.@-]{1,15}$/.test(uplink)) return undefined;
  const forwarding = (await readFile(join(proc, 'sys/net/ipv4/conf', uplink, 'forwarding'), 'utf8').catch(() => '')).trim();
  if (forwarding !== '0') return undefined;
  return `the uplink ${uplink} does not forward IPv4: sandboxes with network "egress" reach ports 80 and 443 (through forkd's proxy) but no other port; set net.ipv4.conf.${uplink}.forwarding=1 (or net.ipv4.ip_forward=1) to allow them`;
}
