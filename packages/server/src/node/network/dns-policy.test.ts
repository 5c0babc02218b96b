import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { addressAllowed, inCidr, nameVerdict, splitRules } from './domain-rules.js';
import { ALLOWED_TYPES, dnsDecision, mayResolve, NEUTRAL_TYPES, reachesNoAddress } from './dns-policy.js';
import { RCODE, TYPE } from './dns-message.js';
import { DENIED_BY_DEFAULT } from './egress-nft.js';

const rules = (allowOut: string[], denyOut: string[], forcedDenyOut: string[] = []) => splitRules({ allowOut, denyOut, forcedDenyOut });
const ask = (name: string, type: number = TYPE.A) => ({ name, type, qclass: 1, opcode: 0 });

test('denied names, and names no rule names when no address is reachable, are answered without asking', () => {
  const open = rules(['a.test'], ['b.test', '*.evil.test']);
  assert.deepEqual(dnsDecision(open, ask('b.test')), { ask: false, rcode: RCODE.NXDOMAIN });
  assert.deepEqual(dnsDecision(open, ask('x.evil.test', TYPE.TXT)), { ask: false, rcode: RCODE.NXDOMAIN });
  assert.deepEqual(dnsDecision(open, ask('c.test')), { ask: true, verdict: 'neutral' });
  assert.deepEqual(dnsDecision(open, ask('a.test')), { ask: true, verdict: 'allow' });
  const closed = rules(['a.test'], ['0.0.0.0/0']);
  assert.deepEqual(dnsDecision(closed, ask('c2vjcmv0.tunnel.test')), { ask: false, rcode: RCODE.NXDOMAIN });
  assert.deepEqual(dnsDecision(closed, ask('a.test')), { ask: true, verdict: 'allow' });
  assert.equal(mayResolve(closed, 'C.Test.'), false, "the proxy's check: a Host name is a query name too");
  assert.equal(mayResolve(closed, 'A.Test.'), true);
  // An address allowed (even a private one: the host's resolver may know internal names) keeps neutral names resolvable.
  assert.equal(dnsDecision(rules(['10.1.0.0/16'], ['0.0.0.0/0']), ask('c.test')).ask, true);
  assert.equal(dnsDecision(rules(['10.1.0.0/16'], ['0.0.0.0/0'], ['10.0.0.0/8']), ask('c.test')).ask, false, 'its allow is forced-denied');
  assert.equal(dnsDecision(rules([], ['0.0.0.0/1', '128.0.0.0/1']), ask('c.test')).ask, false, 'two halves deny everything');
  assert.equal(dnsDecision(rules([], ['0.0.0.0/1', '128.0.0.0/2']), ask('c.test')).ask, true);
});

test('types: a neutral name gets what connecting needs, an allowed one also TXT/NS/SOA/CAA; NULL, ANY, AXFR never', () => {
  const r = rules(['a.test'], []);
  for (const t of [TYPE.A, TYPE.AAAA, TYPE.CNAME, TYPE.HTTPS, TYPE.SVCB, TYPE.MX, TYPE.SRV, TYPE.PTR]) assert.equal(dnsDecision(r, ask('c.test', t)).ask, true, `neutral ${t}`);
  for (const t of [TYPE.TXT, TYPE.NULL, TYPE.ANY, TYPE.NS, TYPE.SOA, 252, 99]) assert.deepEqual(dnsDecision(r, ask('c.test', t)), { ask: false, rcode: RCODE.REFUSED }, `neutral ${t}`);
  for (const t of [TYPE.TXT, TYPE.NS, TYPE.SOA, TYPE.CAA]) assert.equal(dnsDecision(r, ask('a.test', t)).ask, true, `allowed ${t}`);
  for (const t of [TYPE.NULL, TYPE.ANY, 252]) assert.equal(dnsDecision(r, ask('a.test', t)).ask, false, `allowed ${t}`);
  assert.deepEqual(dnsDecision(r, { ...ask('a.test'), qclass: 3 }), { ask: false, rcode: RCODE.REFUSED }, 'CHAOS');
  assert.deepEqual(dnsDecision(r, { ...ask('a.test'), opcode: 2 }), { ask: false, rcode: RCODE.NOTIMP }, 'STATUS');
  for (const n of ['', 'a..test', 'a test', 'a\u0000.test', 'x'.repeat(64) + '.test', `${'a.'.repeat(127)}test`]) assert.equal(dnsDecision(r, ask(n)).ask, false, JSON.stringify(n));
});

const octet = fc.constantFrom(0, 1, 10, 127, 128, 192, 198, 203, 255);
const cidr = fc.tuple(octet, octet, fc.constantFrom(0, 1, 2, 7, 8, 9, 16, 24, 32)).map(([a, b, len]) => `${a}.${b}.0.0/${len}`);
const cidrs = fc.array(cidr, { maxLength: 4 });
const addr = fc.tuple(octet, octet, fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
const name = fc.constantFrom('a.test', 'b.test', 'x.sub.test', 'sub.test', 'c2VjcmV0.evil.test', 'EVIL.test');
const pattern = fc.constantFrom('a.test', 'b.test', '*.sub.test', '*.evil.test', 'evil.test');
const anyRules = fc.record({ allowAddrs: cidrs, denyAddrs: cidrs, forcedAddrs: cidrs, allowNames: fc.array(pattern, { maxLength: 2 }), denyNames: fc.array(pattern, { maxLength: 2 }), forcedNames: fc.array(pattern, { maxLength: 1 }) });

const toInt = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
const toAddr = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');

/** Every address where addressAllowed can change its answer: each range's ends and their neighbours. */
function boundaries(list: string[]): string[] {
  const out = new Set([0, 2 ** 32 - 1]);
  for (const c of list) {
    const [net = '', len = '32'] = c.split('/');
    const size = 2 ** (32 - Number(len));
    const lo = Math.floor(toInt(net) / size) * size;
    for (const n of [lo - 1, lo, lo + size - 1, lo + size]) if (n >= 0 && n < 2 ** 32) out.add(n);
  }
  return [...out].map(toAddr);
}

test('reachesNoAddress agrees with addressAllowed for a neutral name (every boundary address checked)', () => {
  fc.assert(
    fc.property(anyRules, fc.array(addr, { maxLength: 8 }), (s, extra) => {
      const points = [...boundaries([...s.allowAddrs, ...s.denyAddrs, ...s.forcedAddrs, ...DENIED_BY_DEFAULT]), ...extra];
      const reachable = points.some((a) => addressAllowed(s, a, 'neutral', { denied: false, forced: false }));
      assert.equal(reachesNoAddress(s), !reachable);
    }),
    { numRuns: 3000 },
  );
});

test('whatever the rules and question: nothing denied, unreachable or of a refused type is ever asked', () => {
  fc.assert(
    fc.property(anyRules, name, fc.integer({ min: 0, max: 65535 }), fc.constantFrom(1, 1, 1, 3, 255), fc.constantFrom(0, 0, 0, 1, 4), (s, n, type, qclass, opcode) => {
      const d = dnsDecision(s, { name: n.toLowerCase(), type, qclass, opcode });
      if (!d.ask) return;
      const v = nameVerdict(s, n);
      assert.notEqual(v, 'deny');
      assert.equal(d.verdict, v);
      assert.ok(qclass === 1 && opcode === 0);
      assert.ok((v === 'allow' ? ALLOWED_TYPES : NEUTRAL_TYPES).has(type), `type ${type} for a ${v} name`);
      if (v === 'neutral') assert.ok(!reachesNoAddress(s) && !s.forcedAddrs.some((c) => inCidr('0.0.0.0', c) && c.endsWith('/0')));
    }),
    { numRuns: 5000 },
  );
});
