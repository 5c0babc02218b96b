import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { issueTestCertificate, makeTestCa } from '../testing/tls-test-ca.js';
import { waitFor } from '../testing/helpers.js';
import { createLogger } from './logger.js';
import { serveHttp } from './http-server.js';
import { readTlsPair, requireCovers, type TlsSource } from './tls-files.js';

/** The serial number of the certificate a TLS server at `port` presents for `name`, trusting `ca`. */
function servedSerial(port: number, name: string, ca: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, servername: name, ca, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      const serial = s.getPeerCertificate().serialNumber;
      assert.equal(s.alpnProtocol, 'http/1.1', 'a client offering h2 settles on HTTP/1.1');
      s.end();
      resolve(serial);
    });
    s.on('error', reject);
  });
}

test('a pair is read and checked at start: a missing file, a key of another certificate, a certificate for other names', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-tls-'));
  try {
    const ca = await makeTestCa(dir);
    const a = await issueTestCertificate(ca, dir, 'a', ['*.sbx.test']);
    const b = await issueTestCertificate(ca, dir, 'b', ['*.other.test']);
    const source = (over: Partial<TlsSource>): TlsSource => ({ certFile: a.certFile, keyFile: a.keyFile, variables: 'X_CERT / X_KEY', check: ({ cert }) => requireCovers(cert, '8000-x.sbx.test', 'need *.sbx.test'), ...over });
    assert.deepEqual((await readTlsPair(source({}))).cert, a.cert);
    await assert.rejects(readTlsPair(source({ keyFile: join(dir, 'none.pem') })), (e: Error & { code?: string }) => e.code === 'FAILED_PRECONDITION' && /cannot read .*none\.pem \(X_CERT \/ X_KEY\): ENOENT/.test(e.message));
    await assert.rejects(readTlsPair(source({ keyFile: b.keyFile })), (e: Error & { code?: string }) => e.code === 'FAILED_PRECONDITION' && /key values mismatch/.test(e.message));
    await assert.rejects(readTlsPair(source({ certFile: b.certFile, keyFile: b.keyFile })), /not valid for 8000-x\.sbx\.test: need \*\.sbx\.test/);
    // A wildcard covers one label: not the domain's grandchildren.
    assert.throws(() => requireCovers(a.cert, 'a.b.sbx.test', ''));
    requireCovers(a.cert, '49983-sbx-abc.sbx.test', '');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a renewed certificate is served without a restart; a half-written renewal is logged and the served one kept', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-tls-'));
  const lines: string[] = [];
  const logger = createLogger('info', (l) => lines.push(l));
  try {
    const ca = await makeTestCa(dir);
    const [first, second, third] = await Promise.all(['first', 'second', 'third'].map((n) => issueTestCertificate(ca, dir, n, ['*.sbx.test'])));
    const live = { certFile: join(dir, 'live.pem'), keyFile: join(dir, 'live-key.pem') };
    await copyFile(first!.certFile, live.certFile);
    await copyFile(first!.keyFile, live.keyFile);
    const source: TlsSource = { ...live, variables: 'X' };
    const server = await serveHttp({ listener: (_q, r) => r.end('ok'), host: '127.0.0.1', port: 0, logger, tls: { ...(await readTlsPair(source)), source, reloadEveryMs: 50 } });
    try {
      const serial = (c: { cert: Buffer }) => new X509Certificate(c.cert).serialNumber;
      assert.equal(await servedSerial(server.port, 'a.sbx.test', ca.cert), serial(first!));
      // As certbot does: new files renamed into place.
      for (const [from, to] of [[second!.certFile, live.certFile], [second!.keyFile, live.keyFile]] as const) {
        await copyFile(from, `${to}.new`);
        await rename(`${to}.new`, to);
      }
      await waitFor(async () => (await servedSerial(server.port, 'a.sbx.test', ca.cert)) === serial(second!), 5000, 'the renewed certificate served');
      assert.ok(lines.some((l) => /TLS certificate reloaded/.test(l)));
      // Only the certificate written so far: it does not match the key, the second pair stays.
      await copyFile(third!.certFile, live.certFile);
      await waitFor(async () => lines.some((l) => /TLS certificate not reloaded.*key values mismatch/.test(l)), 5000, 'the mismatch logged');
      assert.equal(await servedSerial(server.port, 'a.sbx.test', ca.cert), serial(second!));
      await writeFile(live.keyFile, await readFile(third!.keyFile));
      await waitFor(async () => (await servedSerial(server.port, 'a.sbx.test', ca.cert)) === serial(third!), 5000, 'the completed renewal served');
    } finally {
      await server.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
