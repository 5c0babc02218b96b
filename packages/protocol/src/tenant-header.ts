/**
 * An admin key's call made as another tenant: this header names it, and the
 * call sees and does what a key of that tenant would (audited under the
 * admin's key id and that tenant). Any other key sending it is refused.
 * Its own module, without schemas: the SDK sends it and loads no zod.
 */
export const TENANT_HEADER = 'x-forkd-tenant';
