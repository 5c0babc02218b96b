import { exec } from '../../shared/exec.js';
import type { Logger } from '../../shared/logger.js';

/** Marks forkd's rules in the host firewall's chains (iptables -m comment), so they are found and never confused with others'. */
const COMMENT = 'forkd sandboxes';

/**
 * What forkd keeps in the host firewall's iptables `filter` chains (the ones
 * Docker, ufw and firewalld's iptables backend fill): sandbox links let
 * through. In nftables an `accept` ends only its own base chain, so a host
 * firewall's `FORWARD` or `INPUT` chain with policy drop (Docker sets one on
 * FORWARD, ufw on INPUT) would still drop sandbox traffic forkd's table
 * accepted. These accepts decide nothing: forkd's own chains (priority -10)
 * run first and have dropped whatever a sandbox may not send. As Docker's
 * own rules, they go first in the chain.
 */
export function firewallAccepts(ifPrefix: string): Array<{ chain: 'INPUT' | 'FORWARD'; match: string[] }> {
  const ifs = `${ifPrefix}+`;
  const tag = ['-m', 'comment', '--comment', COMMENT];
  return [
    { chain: 'INPUT', match: ['-i', ifs, ...tag, '-j', 'ACCEPT'] },
    { chain: 'FORWARD', match: ['-i', ifs, ...tag, '-j', 'ACCEPT'] },
    { chain: 'FORWARD', match: ['-o', ifs, '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', ...tag, '-j', 'ACCEPT'] },
  ];
}

/** Whether a line of `nft monitor` is a change to a host firewall's iptables filter table (a reload, a rule removed). */
export function firewallChanged(line: string): boolean {
  return /^(add|insert|delete|replace|flush) (table|chain|rule) ip6? filter\b/.test(line.trim());
}

/**
 * Puts forkd's accepts (firewallAccepts) first in the host's iptables
 * `filter` INPUT and FORWARD chains where those chains exist and lack them.
 * Nothing is made where there is no such table: a host without an iptables
 * firewall is left as it is. Idempotent; failures are logged (the sandboxes'
 * traffic is then as the host firewall decides, as before).
 */
export async function letSandboxesThrough(ifPrefix: string, logger: Pick<Logger, 'warn'>): Promise<void> {
  await ensureAccepts(ifPrefix, logger).catch((err: unknown) => logger.warn('could not let sandbox links through the host firewall', { error: String(err) }));
}

async function ensureAccepts(ifPrefix: string, logger: Pick<Logger, 'warn'>): Promise<void> {
  if (!(await hasFilterTable())) return;
  for (const { chain, match } of firewallAccepts(ifPrefix)) {
    if ((await exec('nft', ['list', 'chain', 'ip', 'filter', chain], { allowFailure: true })).code !== 0) continue;
    if ((await exec('iptables', ['-w', '5', '-C', chain, ...match], { allowFailure: true })).code === 0) continue;
    const r = await exec('iptables', ['-w', '5', '-I', chain, '1', ...match], { allowFailure: true });
    if (r.code !== 0) logger.warn('could not let sandbox links through the host firewall', { chain, stderrTail: r.stderr.slice(-300) });
  }
}

/** Whether the host has an iptables `filter` table (listing with iptables-nft would make one; nft only reads). */
async function hasFilterTable(): Promise<boolean> {
  return (await exec('nft', ['list', 'table', 'ip', 'filter'], { allowFailure: true })).code === 0;
}

/** Removes forkd's accepts (every copy) from the host firewall's chains. */
export async function closeHostFirewall(ifPrefix: string): Promise<void> {
  if (!(await hasFilterTable())) return;
  for (const { chain, match } of firewallAccepts(ifPrefix)) {
    for (let i = 0; i < 8; i++) if ((await exec('iptables', ['-w', '5', '-D', chain, ...match], { allowFailure: true })).code !== 0) break;
  }
}
