import type { ForkdConfig } from './config.js';
import type { TlsFiles } from './http-server.js';
import { readTlsPair, requireCovers } from './tls-files.js';

/** FORKD_TLS_CERT_FILE and FORKD_TLS_KEY_FILE (the API and the node contract), read and checked now, re-read when renewed. */
export async function apiTlsFiles(config: ForkdConfig): Promise<TlsFiles | undefined> {
  const t = config.fleet.tls;
  if (!t) return undefined;
  const source = { ...t, variables: 'FORKD_TLS_CERT_FILE / FORKD_TLS_KEY_FILE' };
  return { ...(await readTlsPair(source)), source };
}

/**
 * FORKD_PROXY_TLS_CERT_FILE and FORKD_PROXY_TLS_KEY_FILE: a certificate that
 * must be valid for the sandbox host names (`*.{FORKD_PROXY_DOMAIN}`), at
 * start and at every renewal.
 */
export async function proxyTlsFiles(config: ForkdConfig): Promise<TlsFiles | undefined> {
  const t = config.proxyTls;
  const domain = config.proxyDomain;
  if (!t || !domain) return undefined;
  const source = {
    certFile: t.certFile,
    keyFile: t.keyFile,
    variables: 'FORKD_PROXY_TLS_CERT_FILE / FORKD_PROXY_TLS_KEY_FILE',
    check: ({ cert }: { cert: Buffer }) => requireCovers(cert, `8000-sandbox.${domain}`, `a certificate for *.${domain} is needed`),
  };
  return { ...(await readTlsPair(source)), source };
}
