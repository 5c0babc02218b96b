import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { enableUplinkForwarding, uplinkForwardingWarning } from './uplink-forwarding.js';
import { readFile } from 'node:fs/promises';

const HEAD = 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n';
const row = (ifname: string, dest: string, metric: number, mask: string) => `${ifname}\t${dest}\t010200C0\t0003\t0\t0\t${metric}\t${mask}\t0\t0\t0\n`;

async function fakeProc(routes: string, forwarding: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-proc-'));
  await mkdir(join(dir, 'net'));
  await writeFile(join(dir, 'net/route'), HEAD + routes);
  for (const [ifname, v] of Object.entries(forwarding)) {
    await mkdir(join(dir, 'sys/net/ipv4/conf', ifname), { recursive: true });
    await writeFile(join(dir, 'sys/net/ipv4/conf', ifname, 'forwarding'), `${v}\n`);
  }
  return dir;
}

test('uplink forwarding: warns naming the default route device when it does not forward, else nothing', async () => {
  const cases: [string, Record<string, string>, RegExp | undefined][] = [
    [row('eth0', '00000000', 0, '00000000') + row('eth0', '000200C0', 0, '00FFFFFF'), { eth0: '0' }, /uplink eth0 does not forward.*net\.ipv4\.conf\.eth0\.forwarding=1/],
    [row('eth0', '00000000', 0, '00000000'), { eth0: '1' }, undefined],
    // The lower metric is the uplink.
    [row('wlan0', '00000000', 600, '00000000') + row('eth1', '00000000', 100, '00000000'), { wlan0: '1', eth1: '0' }, /uplink eth1 /],
    // No default route (an offline host): nothing to say.
    [row('eth0', '000200C0', 0, '00FFFFFF'), { eth0: '0' }, undefined],
  ];
  for (const [routes, fwd, want] of cases) {
    const dir = await fakeProc(routes, fwd);
    try {
      const w = await uplinkForwardingWarning(dir);
      if (want) assert.match(w ?? '', want);
      else assert.equal(w, undefined);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
});

test('forwarding turned on for the uplink when off, remembered across restarts by the marker; a host that already forwards is left alone', async () => {
  const dir = await fakeProc(row('eth0', '00000000', 0, '00000000'), { eth0: '0' });
  const marker = join(dir, 'forwarding-by-forkd');
  try {
    assert.equal(await enableUplinkForwarding(marker, dir), 'eth0');
    assert.equal((await readFile(join(dir, 'sys/net/ipv4/conf/eth0/forwarding'), 'utf8')).trim(), '1');
    assert.equal(await uplinkForwardingWarning(dir), undefined);
    assert.equal(await enableUplinkForwarding(marker, dir), 'eth0', 'a restart: still forkd\'s to guard');
    const other = await fakeProc(row('eth0', '00000000', 0, '00000000'), { eth0: '1' });
    try {
      assert.equal(await enableUplinkForwarding(join(other, 'm'), other), undefined, "the admin's forwarding is not forkd's to guard");
    } finally {
      await rm(other, { recursive: true, force: true });
    }
    const offline = await fakeProc(row('eth0', '000200C0', 0, '00FFFFFF'), { eth0: '0' });
    try {
      assert.equal(await enableUplinkForwarding(join(offline, 'm'), offline), undefined);
    } finally {
      await rm(offline, { recursive: true, force: true });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
