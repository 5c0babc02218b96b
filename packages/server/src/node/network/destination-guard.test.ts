import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DestinationGuard } from './destination-guard.js';
import { attachScript, tableScript } from './egress-nft.js';

const HOST = ['10.0.0.5', '203.0.113.1', 'fe80::1%eth0', '2001:db8::5', '127.0.0.1', '::1'];
const guard = (operatorAllow: string[] = []) => new DestinationGuard({ operatorAllow, hostAddresses: () => HOST, servicePorts: () => [8080, 80] });

test("refused whatever the rules: the host's own addresses, all of loopback, this network, link-local, multicast, broadcast, their IPv4-mapped forms", () => {
  const g = guard();
  for (const a of ['127.0.0.1', '127.0.0.2', '127.255.255.254', '0.0.0.0', '0.1.2.3', '169.254.169.254', '224.0.0.1', '239.1.2.3', '255.255.255.255', '240.0.0.1', '10.0.0.5', '203.0.113.1']) {
    assert.ok(g.refusal(a, 443), a);
  }
  for (const a of ['::1', '::', '::ffff:127.0.0.2', '::ffff:7f00:2', '::ffff:169.254.169.254', '::ffff:10.0.0.5', '::127.0.0.2', 'fe80::1', 'fe80::abcd', 'ff02::1', '2001:db8::5']) {
    assert.ok(g.refusal(a, 443), a);
  }
  // Not canonical literals: getaddrinfo would read `0177.0.0.2` as 127.0.0.2.
  for (const a of ['0177.0.0.2', '127.1', '2130706434', '0x7f.0.0.2', 'localhost', 'fe80::1%eth0', '']) assert.match(g.refusal(a, 80) ?? '', /not a plain IP/, a);
  // What is not the host's: for the rules to decide (private ranges included: the tenant's rules may allow them).
  for (const a of ['8.8.8.8', '198.51.100.2', '10.0.0.6', '192.168.1.1', '2001:db8::6', '::ffff:8.8.8.8']) assert.equal(g.refusal(a, 443), undefined, a);
});

test('an operator allow (not a tenant) lifts it; the node service ports on the host and loopback stay refused', () => {
  const g = guard(['127.0.0.2/32', '169.254.169.254', '10.0.0.5/32', 'fe80::/10']);
  assert.equal(g.refusal('127.0.0.2', 443), undefined);
  assert.equal(g.refusal('::ffff:127.0.0.2', 443), undefined);
  assert.ok(g.refusal('127.0.0.3', 443), 'only what was allowed');
  assert.equal(g.refusal('169.254.169.254', 80 + 1), undefined);
  assert.equal(g.refusal('10.0.0.5', 443), undefined);
  assert.equal(g.refusal('fe80::9', 443), undefined);
  assert.match(g.refusal('127.0.0.2', 80) ?? '', /forkd service/);
  assert.match(g.refusal('10.0.0.5', 8080) ?? '', /forkd service/);
  assert.equal(g.refusal('8.8.8.8', 8080), undefined, 'a service port elsewhere is just a port');
});

test("the host's addresses are read again: a new one is refused within a second", async () => {
  const addrs = ['10.0.0.5'];
  const g = new DestinationGuard({ hostAddresses: () => addrs });
  assert.equal(g.refusal('10.0.0.9', 80), undefined);
  addrs.push('10.0.0.9');
  await new Promise((r) => setTimeout(r, 1100));
  assert.ok(g.refusal('10.0.0.9', 80));
});

test('any IPv4 in 127/8, 0/8, 169.254/16 or 224/3, as itself or IPv4-mapped, is refused (property)', () => {
  const g = guard();
  const octet = fc.integer({ min: 0, max: 255 });
  const first = fc.oneof(fc.constant(127), fc.constant(0), fc.integer({ min: 224, max: 255 }));
  fc.assert(
    fc.property(first, octet, octet, octet, fc.integer({ min: 1, max: 65535 }), (a, b, c, d, port) => {
      const v4 = `${a}.${b}.${c}.${d}`;
      return g.refusal(v4, port) !== undefined && g.refusal(`::ffff:${v4}`, port) !== undefined && g.refusal(`169.254.${c}.${d}`, port) !== undefined;
    }),
    { numRuns: 3000 },
  );
  fc.assert(fc.property(fc.string(), (s) => (g.refusal(s, 80), true)), { numRuns: 2000 });
});

test("nft: the never-reachable ranges and the tenant's forced-denied names' addresses are dropped before any allow", () => {
  const rules = tableScript('t', { dns: 1, http: 2, tls: 3 }, ['169.254.169.254/32', 'fe80::/10']).split('\n');
  assert.ok(rules.some((l) => /add set inet t never .*127\.0\.0\.0\/8/.test(l)));
  assert.ok(rules.includes('add element inet t opallow { 169.254.169.254/32 }'), 'IPv4 only in the nft set');
  const chain = attachScript('t', { ifname: 'fkv1', hostIp: '10.254.0.1' }, { mode: 'egress', allowOut: ['0.0.0.0/0', 'a.test'], denyOut: [], forcedDenyOut: ['b.test'] })
    .split('\n')
    .filter((l) => l.startsWith('add rule inet t sb_fkv1 '));
  const firstAccept = chain.findIndex((l) => l.endsWith(' accept'));
  const at = (re: RegExp) => chain.findIndex((l) => re.test(l));
  assert.ok(at(/@never ip daddr != @opallow drop$/) >= 0 && at(/@never/) < firstAccept, chain.join('\n'));
  assert.ok(at(/@sb_fkv1_lforced drop$/) >= 0 && at(/@sb_fkv1_lforced/) < firstAccept, chain.join('\n'));
});
