import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';
import { startTestInternet, type TestInternet } from '../../testing/test-internet.js';
import { ANY_DNS, FLOOD_PY, HOLD_TCP_PY, HOST_PY, QTYPE, QUERY_PY } from '../../testing/dns-probes.js';

const A = '198.51.100.2';
const { A: TYPE_A, NULL: TYPE_NULL, TXT: TYPE_TXT, ANY: TYPE_ANY } = QTYPE;

describe("forkd's resolver: no tunnel, no upstream lookup of denied names, per-sandbox caps (real runc, netns, test DNS)", { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let internet: TestInternet;

  const py = async (id: string, code: string, ...args: string[]) => (await run(node.manager, id, ['python3', '-c', code, ...args])).stdout.trim();
  const query = (id: string, name: string, type: string = TYPE_A, proto = 'udp') => py(id, QUERY_PY, proto, ANY_DNS, name, type);
  /** The upstream's queries after `from` of them. */
  const upstreamSince = async (from: number) => (await internet.dnsQueries()).slice(from);

  before(async () => {
    internet = await startTestInternet();
    process.env.FORKD_DNS_UPSTREAM = internet.dns;
    node = await createTestNode();
  });

  after(async () => {
    await node?.dispose();
    await internet?.close();
  });

  test('a sandbox whose addresses are all denied cannot tunnel through DNS: its names never reach the upstream', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', allowOut: ['a.test'], denyOut: ['0.0.0.0/0'] } });
    const from = (await internet.dnsQueries()).length;
    assert.equal(await query(s.id, 'c2VjcmV0.tunnel.test', TYPE_TXT), '3 0', 'TXT');
    assert.equal(await query(s.id, 'aGVsbG8.tunnel.test'), '3 0', 'A');
    assert.equal(await query(s.id, 'x.tunnel.test', TYPE_NULL), '3 0', 'NULL');
    assert.equal(await query(s.id, 'eC10Y3A.tunnel.test', TYPE_TXT, 'tcp'), '3 0', 'TXT over TCP');
    assert.match(await py(s.id, HOST_PY, A, 'aHR0cA.tunnel.test'), /^HTTP\/1.1 403/, "a Host header: the proxy's lookup");
    assert.equal(await query(s.id, 'a.test'), `0 1 ${A}`, 'a name its rules allow still resolves');
    assert.deepEqual(await upstreamSince(from), ['a.test 1'], 'only the allowed name went upstream');
    await node.manager.delete(s.id);
  });

  test('with open addresses: TXT, NULL and ANY for a name no rule allows are refused without asking upstream; A and TXT of an allowed name are asked', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', allowOut: ['a.test'] } });
    const from = (await internet.dnsQueries()).length;
    for (const t of [TYPE_TXT, TYPE_NULL, TYPE_ANY]) assert.equal(await query(s.id, `c2VjcmV0.tunnel.test`, t), '5 0', `type ${t}`);
    assert.equal(await query(s.id, 'b.test'), '0 1 198.51.100.3', 'A of a neutral name');
    assert.equal(await query(s.id, 'a.test', TYPE_TXT), '0 0', 'TXT of an allowed name');
    assert.deepEqual(await upstreamSince(from), ['b.test 1', 'a.test 16']);
    await node.manager.delete(s.id);
  });

  test('a denied name is answered NXDOMAIN and never sent upstream (exact and wildcard rules)', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', denyOut: ['b.test', '*.evil.test'] } });
    const from = (await internet.dnsQueries()).length;
    assert.equal(await query(s.id, 'b.test'), '3 0');
    assert.equal(await query(s.id, 'c2VjcmV0.evil.test'), '3 0');
    assert.equal(await query(s.id, 'aGVsbG8.evil.test', TYPE_TXT), '3 0');
    assert.equal(await query(s.id, 'a.test'), `0 1 ${A}`);
    assert.deepEqual(await upstreamSince(from), ['a.test 1']);
    await node.manager.delete(s.id);
  });

  test("a sandbox flooding the resolver with queries the upstream never answers does not starve a neighbour's lookups", async (t) => {
    const [flooder, neighbour] = await Promise.all([0, 1].map(() => node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress' } })));
    assert.ok(flooder && neighbour);
    const from = (await internet.dnsQueries()).length;
    const flood = py(flooder.id, FLOOD_PY, ANY_DNS, '6');
    await new Promise((r) => setTimeout(r, 1500));
    const answers: string[] = [];
    for (let i = 0; i < 5; i++) answers.push(await query(neighbour.id, 'a.test'));
    const f = JSON.parse(await flood) as { sent: number; got: Record<string, number> };
    assert.deepEqual(answers, Array(5).fill(`0 1 ${A}`), `the neighbour's lookups during the flood (${JSON.stringify(f)})`);
    // The flooder's excess gets SERVFAIL at once, and what reaches the upstream is bounded per sandbox.
    assert.ok((f.got['2'] ?? 0) > 0, JSON.stringify(f));
    const hung = (await upstreamSince(from)).filter((q) => q.endsWith('.hang.test 1')).length;
    t.diagnostic(`flooder sent ${f.sent}, replies by rcode ${JSON.stringify(f.got)}, ${hung} went upstream`);
    assert.ok(hung <= 200, `${hung} of the flooder's ${f.sent} queries went upstream`);
    await Promise.all([flooder, neighbour].map((s) => node.manager.delete(s.id)));
  });

  test("a sandbox holding open TCP connections to port 53 keeps a few; a neighbour's TCP lookups work", async () => {
    const [holder, neighbour] = await Promise.all([0, 1].map(() => node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress' } })));
    assert.ok(holder && neighbour);
    const holding = py(holder.id, HOLD_TCP_PY, ANY_DNS, '160', '4');
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(await query(neighbour.id, 'a.test', TYPE_A, 'tcp'), `0 1 ${A}`);
    const kept = Number(await holding);
    assert.ok(kept > 0 && kept <= 8, `the resolver kept ${kept} of the holder's 160`);
    await Promise.all([holder, neighbour].map((s) => node.manager.delete(s.id)));
  });
});
