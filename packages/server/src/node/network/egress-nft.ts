import type { NetworkRules } from '@forkd/protocol';
import { splitRules } from './domain-rules.js';
import { NEVER_V4 } from './destination-guard.js';
import type { EgressPorts } from './egress-services.js';

/**
 * The nftables side of egress: one table of forkd's own (`inet <table>`)
 * that never matches an interface it did not make (every rule is keyed by
 * the exact host-side veth names in its sets), so it leaves the host's
 * other traffic and any other forkd node's alone.
 *
 * Every sandbox has the same address inside (SANDBOX_IP, gateway
 * GATEWAY_IP), so a snapshot's view of its own network holds in every fork
 * and restore; the host tells sandboxes apart by their veth. Before
 * conntrack, a packet from a sandbox's veth gets that veth's unique host-side
 * address as its source (stateless), so connections of two sandboxes never
 * share a conntrack tuple and replies route back by destination; after
 * routing, a packet out of the veth gets SANDBOX_IP back as its destination.
 * Masquerade then NATs the unique address to the host's own.
 */
export const SANDBOX_IP = '10.255.255.2';
export const GATEWAY_IP = '10.255.255.1';
export const SANDBOX_PREFIX = 30;

/**
 * Denied unless allowed explicitly: "this" network, private (RFC 1918),
 * shared (CGNAT), loopback, link-local, IETF protocol assignments,
 * benchmarking, multicast, reserved and broadcast. The host's own addresses
 * are refused earlier: traffic from a sandbox to the host is dropped at the
 * input hook, whatever its destination address.
 */
export const DENIED_BY_DEFAULT = ['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24', '192.168.0.0/16', '198.18.0.0/15', '224.0.0.0/3'];

/** One sandbox's attachment: its host-side veth and the unique address it stands for on the host. */
export interface Attachment {
  ifname: string;
  hostIp: string;
}

/**
 * The table with its hooks and no sandbox in it (idempotent: `add` keeps
 * what is there). DNS (udp and tcp 53, to any address) and TCP 80 and 443
 * from a sandbox are redirected to this node's resolver and proxy (`ports`).
 * `never` (NEVER_V4) is dropped first in every sandbox's chain but for what
 * the operator allowed (`operatorAllow`, IPv4 CIDRs; `opallow`).
 * `routedUplink`: the uplink forkd turned forwarding on for, guarded.
 */
export function tableScript(table: string, ports: EgressPorts, operatorAllow: readonly string[] = [], routedUplink?: string): string {
  const t = `inet ${table}`;
  const v4 = operatorAllow.filter((c) => !c.includes(':'));
  return [
    `add table ${t}`,
    `add set ${t} ifs { type ifname; }`,
    `add map ${t} outer { type ifname : ipv4_addr; }`,
    `add map ${t} rules { type ifname : verdict; }`,
    `add set ${t} denied { type ipv4_addr; flags interval; elements = { ${DENIED_BY_DEFAULT.join(', ')} } }`,
    `add set ${t} never { type ipv4_addr; flags interval; elements = { ${NEVER_V4.join(', ')} } }`,
    `add set ${t} opallow { type ipv4_addr; flags interval; auto-merge; }`,
    `flush set ${t} opallow`,
    ...(v4.length ? [`add element ${t} opallow { ${v4.join(', ')} }`] : []),
    // Before conntrack (-200): the unique source, and nothing but SANDBOX_IP over IPv4 from a sandbox.
    `add chain ${t} pre_sb { type filter hook prerouting priority -300; policy accept; }`,
    `add chain ${t} nat_pre_sb { type nat hook prerouting priority -100; policy accept; }`,
    `add chain ${t} input_sb { type filter hook input priority -10; policy accept; }`,
    `add chain ${t} fwd_sb { type filter hook forward priority -10; policy accept; }`,
    `add chain ${t} nat_sb { type nat hook postrouting priority 100; policy accept; }`,
    `add chain ${t} post_sb { type filter hook postrouting priority 300; policy accept; }`,
    `flush chain ${t} pre_sb`,
    `flush chain ${t} nat_pre_sb`,
    `flush chain ${t} input_sb`,
    `flush chain ${t} fwd_sb`,
    `flush chain ${t} nat_sb`,
    `flush chain ${t} post_sb`,
    `add rule ${t} pre_sb iifname @ifs meta nfproto != ipv4 drop`,
    `add rule ${t} pre_sb iifname @ifs ip saddr != ${SANDBOX_IP} drop`,
    `add rule ${t} pre_sb iifname @ifs ip saddr set iifname map @outer`,
    // Resolving elsewhere is impossible: every query is forkd's resolver's. Web traffic goes through the proxy.
    `add rule ${t} nat_pre_sb iifname @ifs meta l4proto { tcp, udp } th dport 53 redirect to :${ports.dns}`,
    `add rule ${t} nat_pre_sb iifname @ifs tcp dport 80 redirect to :${ports.http}`,
    `add rule ${t} nat_pre_sb iifname @ifs tcp dport 443 redirect to :${ports.tls}`,
    // The gateway and every other host address: no host service is reachable from a sandbox, but for
    // what the redirect above brought to the resolver and proxy (a connection straight to their ports has
    // no DNAT status and is dropped).
    `add rule ${t} input_sb iifname @ifs ct status dnat meta l4proto { tcp, udp } th dport ${ports.dns} ct original proto-dst 53 accept`,
    `add rule ${t} input_sb iifname @ifs ct status dnat tcp dport ${ports.http} ct original proto-dst 80 accept`,
    `add rule ${t} input_sb iifname @ifs ct status dnat tcp dport ${ports.tls} ct original proto-dst 443 accept`,
    `add rule ${t} input_sb iifname @ifs drop`,
    // Inbound only through the port proxy (which enters the namespace): replies only.
    `add rule ${t} fwd_sb oifname @ifs ct state established,related accept`,
    `add rule ${t} fwd_sb oifname @ifs drop`,
    // forkd turned forwarding on for the uplink (uplink-forwarding.ts): a new connection routed through this host from there is
    // refused, unless something published it (DNAT: a port another tool maps); replies to anyone's connections pass.
    ...(routedUplink ? [`add rule ${t} fwd_sb iifname "${routedUplink}" ct state new ct status & dnat == 0 drop`] : []),
    // A rule change applies to the next connection: open ones stay.
    `add rule ${t} fwd_sb iifname @ifs ct state established,related accept`,
    `add rule ${t} fwd_sb iifname @ifs iifname vmap @rules`,
    `add rule ${t} fwd_sb iifname @ifs drop`,
    `add rule ${t} nat_sb iifname @ifs masquerade`,
    `add rule ${t} post_sb oifname @ifs ip daddr set ${SANDBOX_IP}`,
  ].join('\n') + '\n';
}

const chainOf = (a: Attachment) => `sb_${a.ifname}`;

/** Adds or replaces one sandbox's rules, in one transaction (nft -f is atomic). */
export function attachScript(table: string, a: Attachment, rules: NetworkRules): string {
  const t = `inet ${table}`;
  const c = chainOf(a);
  const set = (name: string, items: string[]) => [`add set ${t} ${name} { type ipv4_addr; flags interval; auto-merge; }`, `flush set ${t} ${name}`, ...(items.length ? [`add element ${t} ${name} { ${items.join(', ')} }`] : [])];
  const learned = (name: string) => [`add set ${t} ${name} { type ipv4_addr; flags timeout; }`, `flush set ${t} ${name}`];
  const s = splitRules(rules);
  return [
    ...set(`${c}_allow`, s.allowAddrs),
    ...set(`${c}_deny`, s.denyAddrs),
    // Addresses forkd's resolver returned for allowed and denied names (see EgressPolicy), until their TTL;
    // relearned under new rules.
    ...learned(`${c}_lallow`),
    ...learned(`${c}_ldeny`),
    ...learned(`${c}_lforced`),
    `add chain ${t} ${c}`,
    `flush chain ${t} ${c}`,
    // Before any allow: what no sandbox reaches (but by the operator's leave), and the addresses of the
    // tenant's forced-denied names (its forced addresses are dropped earlier still, egress-limits-nft.ts).
    `add rule ${t} ${c} ip daddr @never ip daddr != @opallow drop`,
    `add rule ${t} ${c} ip daddr @${c}_lforced drop`,
    // Allow wins over deny; the defaults' denial over the rest, but for an address allowed explicitly.
    `add rule ${t} ${c} ip daddr @${c}_allow accept`,
    `add rule ${t} ${c} ip daddr @${c}_lallow ip daddr != @denied accept`,
    `add rule ${t} ${c} ip daddr @${c}_deny drop`,
    `add rule ${t} ${c} ip daddr @${c}_ldeny drop`,
    `add rule ${t} ${c} ip daddr @denied drop`,
    `add rule ${t} ${c} accept`,
    `add element ${t} ifs { "${a.ifname}" }`,
    `add element ${t} outer { "${a.ifname}" : ${a.hostIp} }`,
    `add element ${t} rules { "${a.ifname}" : goto ${c} }`,
  ].join('\n') + '\n';
}

/**
 * Removes one sandbox, whatever of it is there: everything is first added
 * (a no-op for what exists), then deleted, in one transaction, so the
 * script is valid however far an attachment got.
 */
export function detachScript(table: string, a: Attachment): string {
  const t = `inet ${table}`;
  const c = chainOf(a);
  return [
    `add chain ${t} ${c}`,
    `add set ${t} ${c}_allow { type ipv4_addr; flags interval; }`,
    `add set ${t} ${c}_deny { type ipv4_addr; flags interval; }`,
    `add set ${t} ${c}_lallow { type ipv4_addr; flags timeout; }`,
    `add set ${t} ${c}_ldeny { type ipv4_addr; flags timeout; }`,
    `add set ${t} ${c}_lforced { type ipv4_addr; flags timeout; }`,
    `add element ${t} ifs { "${a.ifname}" }`,
    `add element ${t} rules { "${a.ifname}" : goto ${c} }`,
    `delete element ${t} rules { "${a.ifname}" }`,
    `delete element ${t} ifs { "${a.ifname}" }`,
    `flush chain ${t} ${c}`,
    `delete chain ${t} ${c}`,
    `delete set ${t} ${c}_allow`,
    `delete set ${t} ${c}_deny`,
    `delete set ${t} ${c}_lallow`,
    `delete set ${t} ${c}_ldeny`,
    `delete set ${t} ${c}_lforced`,
  ].join('\n') + '\n';
}
