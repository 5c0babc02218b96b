import { ForkdError, TENANT_HEADER, TenantName } from '@forkd/protocol';
import type { Principal } from './api-keys.js';

/**
 * The principal a call runs as: the key's own, or, for an admin key that
 * names one in TENANT_HEADER, that tenant's (so an operator finds and acts
 * on a misbehaving tenant's sandboxes through the same tenant view, gates
 * and audit as the tenant; the audit keeps the admin's key id). Any other
 * key naming a tenant is refused, never silently ignored.
 */
export function actingAs(who: Principal, header: string | undefined): Principal {
  if (header === undefined || header === '') return who;
  if (!who.admin) throw new ForkdError('PERMISSION_DENIED', `${TENANT_HEADER} needs an admin key`);
  const t = TenantName.safeParse(header);
  if (!t.success) throw new ForkdError('INVALID_ARGUMENT', `${TENANT_HEADER}: ${t.error.issues[0]?.message ?? 'invalid tenant'}`);
  return { ...who, tenant: t.data };
}
