import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeE2b, type E2bRun } from '../testing/e2b-suite.js';
import { FETCH_PY, startTestInternet, type TestInternet } from '../testing/test-internet.js';

const [A, B] = ['203.0.113.2', '203.0.113.3'];

/**
 * E2B's network options through the official `e2b` SDK (2.51.0 and 2.35.0)
 * against a real `forkd serve`, to the test's own internet only: allowOut
 * and denyOut at create, allowInternetAccess: false, updateNetwork, and a
 * rule forkd cannot take refused with a 400.
 */
let internet: TestInternet | undefined;
before(async () => {
  internet = await startTestInternet();
});
after(async () => {
  await internet?.close();
});

describeE2b('the official e2b SDK: network options mapped onto forkd egress rules', (run: E2bRun) => {
  const reaches = async (s: InstanceType<E2bRun['Sandbox']>, addr: string) => (await s.commands.run(`python3 -c "${FETCH_PY.replace(/"/g, '\\"')}" http://${addr}:8080/`)).stdout.trim() === `hello from ${addr}`;

  test('allowOut and denyOut at create; updateNetwork replaces them; allowInternetAccess: false is loopback only', async () => {
    const s = await run.Sandbox.create('base', { network: { allowOut: [A], denyOut: ['0.0.0.0/0'] }, timeoutMs: 120_000 });
    try {
      assert.equal(await reaches(s, A), true, 'allowed');
      assert.equal(await reaches(s, B), false, 'denied');
      await s.updateNetwork({ denyOut: [`${A}/32`] });
      assert.equal(await reaches(s, A), false, 'denied after the update');
      assert.equal(await reaches(s, B), true, 'allowed after the update');
    } finally {
      await s.kill();
    }
    const off = await run.Sandbox.create('base', { allowInternetAccess: false, timeoutMs: 120_000 });
    try {
      assert.equal(await reaches(off, A), false);
      assert.equal((await off.commands.run('ls /sys/class/net')).stdout.trim(), 'lo');
    } finally {
      await off.kill();
    }
  });

  test('a rule forkd cannot take is refused, not ignored', async () => {
    await assert.rejects(run.Sandbox.create('base', { network: { denyOut: ['::/0'] }, timeoutMs: 60_000 }), (e: Error) => /IPv6 rules are not supported/.test(e.message));
  });
});
