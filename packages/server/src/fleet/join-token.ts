import { join } from 'node:path';
import { persistentToken } from '../node-http/node-token.js';

/** Where a control plane keeps the token nodes present to join its fleet (copy it to each node's FORKD_JOIN_TOKEN_FILE). */
export function joinTokenPath(stateDir: string): string {
  return join(stateDir, 'join.token');
}

/** The fleet's join token: made at the first start, the same afterwards (every replica must be given the same file). */
export function joinToken(stateDir: string): Promise<string> {
  return persistentToken(joinTokenPath(stateDir), 'fjt_');
}
