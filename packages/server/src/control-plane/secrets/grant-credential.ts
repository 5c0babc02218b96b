import { ForkdError, HEADER_UNSAFE, parseHeaderTemplate, type NodeCredential } from '@forkd/protocol';
import type { GrantRecord } from '../../store/secret-records.js';

/**
 * A grant with its secret's value put into the header template: what a node
 * gets (never the template's secret name lookup, the key or the store).
 */
export const MAX_HEADER_VALUE = 80 * 1024;

export function grantCredential(g: GrantRecord, value: string): NodeCredential {
  const t = parseHeaderTemplate(g.header);
  if (typeof t === 'string') throw new ForkdError('INVALID_ARGUMENT', t);
  const headerValue = t.value.replaceAll('{secret}', value);
  // The value was checked when set; checked again so that no stored row can ever split a header.
  if (HEADER_UNSAFE.test(headerValue)) throw new ForkdError('INVALID_ARGUMENT', `secret ${g.secret} cannot be sent in a header`);
  // A template repeating {secret} must not make a header no server takes (nor a node message over its limit).
  if (headerValue.length > MAX_HEADER_VALUE) throw new ForkdError('INVALID_ARGUMENT', `header ${t.name} would be over ${MAX_HEADER_VALUE} bytes with secret ${g.secret}`);
  return {
    grantId: g.id,
    secret: g.secret,
    hosts: g.hosts,
    ...(g.methods ? { methods: g.methods } : {}),
    ...(g.paths ? { paths: g.paths } : {}),
    headerName: t.name,
    headerValue,
    ...(g.expiresAt ? { expiresAt: g.expiresAt } : {}),
  };
}

export function grantExpired(g: { expiresAt?: string | undefined }, now: number): boolean {
  return g.expiresAt !== undefined && Date.parse(g.expiresAt) <= now;
}
