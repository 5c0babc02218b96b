import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';

/** The part of the Kubernetes API a control plane reads: JSON by path. */
export interface KubernetesApi {
  /** GETs `path` (with its query); the parsed JSON, untrusted. Throws UNAVAILABLE when the API server cannot be asked, and its status otherwise. */
  get(path: string): Promise<unknown>;
  /** The namespace this process runs in (the node pods are looked for there). */
  namespace: string;
}

/** Where a pod's service account is mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** A list of pods of a few hundred nodes is well under this; more is refused rather than buffered. */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

export interface KubernetesApiOptions {
  /** The API server, e.g. https://10.96.0.1:443. */
  url: string;
  namespace: string;
  /** Read before every call: the kubelet rotates a projected service-account token in place. */
  token: () => Promise<string>;
  /** PEM of the CA that signed the API server's certificate. */
  ca?: Buffer | undefined;
  timeoutMs?: number;
}

/**
 * The API as seen from inside a pod: the service's address from
 * KUBERNETES_SERVICE_HOST/PORT, the service account's token, CA and
 * namespace from its mounted files. FAILED_PRECONDITION outside a pod.
 */
export async function inClusterApi(env: NodeJS.ProcessEnv = process.env, dir = SERVICE_ACCOUNT_DIR): Promise<KubernetesApi> {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT || '443';
  if (!host) throw new ForkdError('FAILED_PRECONDITION', 'FORKD_NODE_DISCOVERY=kubernetes: KUBERNETES_SERVICE_HOST is not set (not in a pod?)');
  const read = (f: string) =>
    readFile(join(dir, f)).catch((err: unknown) => {
      throw new ForkdError('FAILED_PRECONDITION', `FORKD_NODE_DISCOVERY=kubernetes: cannot read the service account's ${f} in ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    });
  const namespace = (await read('namespace')).toString().trim();
  const ca = await read('ca.crt');
  await read('token');
  return kubernetesApi({ url: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, namespace, ca, token: async () => (await read('token')).toString().trim() });
}

export function kubernetesApi(o: KubernetesApiOptions): KubernetesApi {
  return {
    namespace: o.namespace,
    async get(path) {
      const url = new URL(path, o.url);
      const res = await send(url, await o.token(), o.ca, o.timeoutMs ?? 10_000);
      if (res.status !== 200) {
        const code = res.status === 401 ? 'UNAUTHENTICATED' : res.status === 403 ? 'PERMISSION_DENIED' : res.status === 404 ? 'NOT_FOUND' : 'UNAVAILABLE';
        throw new ForkdError(code, `the Kubernetes API answered ${res.status} to GET ${url.pathname}`);
      }
      try {
        return JSON.parse(res.body.toString('utf8')) as unknown;
      } catch {
        throw new ForkdError('UNAVAILABLE', `the Kubernetes API answered GET ${url.pathname} with something else than JSON`);
      }
    },
  };
}

function send(url: URL, token: string, ca: Buffer | undefined, timeoutMs: number): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new ForkdError('UNAVAILABLE', `the Kubernetes API at ${url.origin} cannot be reached: ${why}`));
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    const onResponse = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_RESPONSE_BYTES) {
          res.destroy();
          fail(`answer over ${MAX_RESPONSE_BYTES} bytes`);
        } else chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', (err) => fail(err.message));
    };
    const req = url.protocol === 'https:' ? httpsRequest(url, { headers, ca, timeout: timeoutMs }, onResponse) : httpRequest(url, { headers, timeout: timeoutMs }, onResponse);
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => fail(err.message));
    req.end();
  });
}
