import { headerOf } from '../http/raw-http.js';
import type { IncomingMessage } from 'node:http';
import type { SandboxInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { fileSignature, type AccessTokens } from './access-tokens.js';

/**
 * Which sandbox an envd request is for, with one shared base URL for all of
 * them (E2B_SANDBOX_URL): the `E2b-Sandbox-Id` header, else the access
 * token, else a presigned URL's signature, else the only sandbox there is.
 */


export interface Routed {
  /** The sandbox asked for; undefined when nothing names one (502). */
  id: string | undefined;
}

export async function routeEnvd(svc: NodeService, tokens: AccessTokens, req: IncomingMessage, url: URL): Promise<Routed> {
  const byHeader = headerOf(req, 'e2b-sandbox-id');
  if (byHeader) return { id: byHeader };
  const live = (): Promise<SandboxInfo[]> => svc.list();
  const token = headerOf(req, 'x-access-token');
  if (token) return { id: (await live()).find((s) => tokens.matches(s.id, token))?.id };
  const sig = url.searchParams.get('signature');
  if (sig && url.pathname === '/files') {
    const op = req.method === 'POST' ? 'write' : 'read';
    const path = url.searchParams.get('path') ?? '';
    const user = url.searchParams.get('username') ?? '';
    const exp = url.searchParams.get('signature_expiration') ?? undefined;
    return { id: (await live()).find((s) => fileSignature(path, op, user, tokens.token(s.id), exp) === sig)?.id };
  }
  const all = await live();
  return { id: all.length === 1 ? all[0]!.id : undefined };
}
