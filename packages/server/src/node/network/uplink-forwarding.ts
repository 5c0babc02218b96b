import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The device of the default route with the lowest metric, or undefined (an offline host). `proc` is /proc (a directory of the same shape in tests). */
export async function uplinkOf(proc = '/proc'): Promise<string | undefined> {
  const routes = await readFile(join(proc, 'net/route'), 'utf8').catch(() => '');
  // Default routes: destination and mask 0; the lowest metric wins.
  const defaults = routes
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[1] === '00000000' && f[7] === '00000000' && f[0])
    .sort((a, b) => Number(a[6]) - Number(b[6]));
  const uplink = defaults[0]?.[0];
  return uplink && /^[\w.@-]{1,15}$/.test(uplink) ? uplink : undefined;
}

const forwardingFile = (proc: string, uplink: string) => join(proc, 'sys/net/ipv4/conf', uplink, 'forwarding');

/**
 * Why egress would half-work on this host, or undefined. Replies to a
 * sandbox's forwarded (non-proxied) connections come in on the uplink and
 * are forwarded only if the uplink forwards.
 */
export async function uplinkForwardingWarning(proc = '/proc'): Promise<string | undefined> {
  const uplink = await uplinkOf(proc);
  if (!uplink) return undefined;
  const forwarding = (await readFile(forwardingFile(proc, uplink), 'utf8').catch(() => '')).trim();
  if (forwarding !== '0') return undefined;
  return `the uplink ${uplink} does not forward IPv4: sandboxes with network "egress" reach ports 80 and 443 (through forkd's proxy) but no other port; set net.ipv4.conf.${uplink}.forwarding=1 (or net.ipv4.ip_forward=1), or leave FORKD_HOST_FORWARDING unset for forkd to do it`;
}

/**
 * Turns IPv4 forwarding on for the uplink when it is off, as Docker and
 * Podman do for their containers' egress; returns the uplink when forkd
 * forwards on it (now, or since an earlier start: `marker`, a file in the
 * run directory, remembers that until a reboot resets both). The egress
 * table then drops what a router would forward that forkd did not ask for
 * (egress-nft.ts, `routedUplink`): the host does not become the LAN's router.
 */
export async function enableUplinkForwarding(marker: string, proc = '/proc'): Promise<string | undefined> {
  const uplink = await uplinkOf(proc);
  if (!uplink) return undefined;
  const file = forwardingFile(proc, uplink);
  const on = (await readFile(file, 'utf8').catch(() => '')).trim();
  if (on === '0') {
    // The marker first: forwarding never stays on unguarded after a failure between the two.
    await writeFile(marker, `${uplink}\n`);
    await writeFile(file, '1\n');
    return uplink;
  }
  const before = (await readFile(marker, 'utf8').catch(() => '')).trim();
  return before === uplink ? uplink : undefined;
}
