/** HTTPS for sandbox host names: the wildcard certificate and the listener's port. */
export interface ProxyTlsConfig {
  certFile: string;
  keyFile: string;
  port: number;
}

/** The port proxy's host names (`{port}-{id}.{domain}`) and, when set, their HTTPS listener. */
export interface ProxyConfig {
  /** FORKD_PROXY_DOMAIN, lowercased: wildcard DNS `*.{domain}` points at this host. */
  domain?: string | undefined;
  /** FORKD_PROXY_TLS_CERT_FILE and FORKD_PROXY_TLS_KEY_FILE (a certificate for `*.{domain}`, PEM), FORKD_PROXY_HTTPS_PORT (default 443). */
  tls?: ProxyTlsConfig | undefined;
}

/** A DNS name of letters, digits and inner hyphens per label; no scheme, port or trailing dot. */
const DOMAIN = /^(?=.{1,200}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

function domain(v: string | undefined): string | undefined {
  if (v === undefined || v === '') return undefined;
  const d = v.toLowerCase();
  if (!DOMAIN.test(d)) throw new Error(`FORKD_PROXY_DOMAIN must be a DNS name, such as sbx.example.com (no scheme, port or wildcard), got ${JSON.stringify(v)}`);
  return d;
}

function httpsPort(v: string | undefined): number {
  if (v === undefined || v === '') return 443;
  if (!/^\d{1,5}$/.test(v) || Number(v) < 1 || Number(v) > 65535) throw new Error(`FORKD_PROXY_HTTPS_PORT must be a port (1-65535), got ${JSON.stringify(v)}`);
  return Number(v);
}

export function proxyConfig(env: NodeJS.ProcessEnv): ProxyConfig {
  const d = domain(env.FORKD_PROXY_DOMAIN);
  const [certFile, keyFile] = [env.FORKD_PROXY_TLS_CERT_FILE || undefined, env.FORKD_PROXY_TLS_KEY_FILE || undefined];
  if (!certFile !== !keyFile) throw new Error('FORKD_PROXY_TLS_CERT_FILE and FORKD_PROXY_TLS_KEY_FILE go together');
  if (!certFile || !keyFile) {
    if (env.FORKD_PROXY_HTTPS_PORT) throw new Error('FORKD_PROXY_HTTPS_PORT needs FORKD_PROXY_TLS_CERT_FILE and FORKD_PROXY_TLS_KEY_FILE');
    return { domain: d };
  }
  if (!d) throw new Error('FORKD_PROXY_TLS_CERT_FILE needs FORKD_PROXY_DOMAIN (the certificate is for *.<domain>)');
  return { domain: d, tls: { certFile, keyFile, port: httpsPort(env.FORKD_PROXY_HTTPS_PORT) } };
}
