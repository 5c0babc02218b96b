import { toForkdError } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/node-service.js';

export const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
export const CA_FILE = '/usr/local/share/ca-certificates/forkd-sandbox-ca.crt';

type Files = Pick<NodeService, 'readFile' | 'writeFile' | 'mkdir'>;

async function text(files: Files, id: string, path: string): Promise<string | undefined> {
  try {
    const f = await files.readFile(id, path);
    const parts: Buffer[] = [];
    for await (const c of f.chunks) parts.push(c);
    return Buffer.concat(parts).toString('utf8');
  } catch (err) {
    if (toForkdError(err).code === 'NOT_FOUND') return undefined;
    throw err;
  }
}

/**
 * Puts the sandbox CA's certificate (public) into the sandbox's trust store,
 * through the guest agent's file API (never a host path in its root):
 * appended to Debian's bundle, which curl, OpenSSL, Python and git read,
 * and in /usr/local/share/ca-certificates so update-ca-certificates keeps it.
 */
export async function installCaCertificate(files: Files, id: string, pem: string): Promise<void> {
  await files.mkdir(id, '/usr/local/share/ca-certificates').catch(() => undefined);
  await files.writeFile(id, CA_FILE, Buffer.from(pem), { mode: 0o644 });
  const bundle = await text(files, id, CA_BUNDLE);
  if (bundle?.includes(pem.trim())) return;
  if (bundle === undefined) await files.mkdir(id, '/etc/ssl/certs').catch(() => undefined);
  const sep = bundle === undefined || bundle.endsWith('\n') || bundle === '' ? '' : '\n';
  await files.writeFile(id, CA_BUNDLE, Buffer.from(sep + pem), bundle === undefined ? { mode: 0o644 } : { append: true });
}
