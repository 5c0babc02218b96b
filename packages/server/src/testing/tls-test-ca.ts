import { request } from 'node:https';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { exec } from '../shared/exec.js';

/** A self-signed certificate for 127.0.0.1 and `ips` (its own CA), made in `dir`; for TLS between test processes. */
export async function makeTestCertificate(dir: string, ips: string[] = []): Promise<{ certFile: string; keyFile: string; cert: Buffer }> {
  const certFile = join(dir, 'tls-cert.pem');
  const keyFile = join(dir, 'tls-key.pem');
  await exec('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', `subjectAltName=${['127.0.0.1', ...ips].map((ip) => `IP:${ip}`).join(',')}`]);
  return { certFile, keyFile, cert: await readFile(certFile) };
}

/** A certificate authority of the test's own, for certificates its clients trust by it (`ca`, NODE_EXTRA_CA_CERTS). */
export interface TestCa {
  certFile: string;
  keyFile: string;
  cert: Buffer;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export async function makeTestCa(dir: string): Promise<TestCa> {
  const certFile = join(dir, 'test-ca.pem');
  const keyFile = join(dir, 'test-ca-key.pem');
  await exec('openssl', ['req', '-x509', ...EC, '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=forkd test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  return { certFile, keyFile, cert: await readFile(certFile) };
}

/**
 * A server certificate `ca` signs for `dnsNames` (`*.sbx.test` for a
 * wildcard), its files `<name>.pem` and `<name>-key.pem` in `dir`.
 */
export async function issueTestCertificate(ca: TestCa, dir: string, name: string, dnsNames: string[], days = 2): Promise<{ certFile: string; keyFile: string; cert: Buffer }> {
  const [certFile, keyFile, csr, ext] = ['.pem', '-key.pem', '.csr', '.ext'].map((x) => join(dir, `${name}${x}`)) as [string, string, string, string];
  await exec('openssl', ['req', ...EC, '-keyout', keyFile, '-out', csr, '-subj', `/CN=${dnsNames[0] ?? name}`]);
  await writeFile(ext, `subjectAltName=${dnsNames.map((n) => `DNS:${n}`).join(',')}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  await exec('openssl', ['x509', '-req', '-in', csr, '-CA', ca.certFile, '-CAkey', ca.keyFile, '-CAcreateserial', '-out', certFile, '-days', String(days), '-extfile', ext]);
  return { certFile, keyFile, cert: await readFile(certFile) };
}

/**
 * A fetch that trusts `ca` (the test's own certificate), for SDK clients in
 * this process: NODE_EXTRA_CA_CERTS is read only at a process's start, so
 * child processes get that instead.
 */
export function fetchTrusting(ca: Buffer): typeof globalThis.fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = new Headers(init?.headers);
    const body = init?.body === undefined || init.body === null ? undefined : Buffer.from(await new Response(init.body).arrayBuffer());
    if (body) headers.set('content-length', String(body.length));
    return new Promise<Response>((resolve, reject) => {
      const req = request(url, { method: init?.method ?? 'GET', headers: Object.fromEntries(headers), ca }, (res) => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        const status = res.statusCode ?? 500;
        resolve(new Response(status === 204 || status === 304 ? null : (Readable.toWeb(res) as ReadableStream), { status, headers: h }));
      });
      init?.signal?.addEventListener('abort', () => req.destroy(new Error('aborted')));
      req.on('error', reject);
      req.end(body);
    });
  };
}
