import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import { policyRuntime } from '../caller-view.js';
import { gateGrant } from '../../policy/grant-gate.js';
import { view, type RouteDeps } from './route.js';

/**
 * The sandbox's `grants` policy for one grant (made through the grant route
 * or per call on an exec): each host is one call of the gate, as
 * `SECRET HOST` (`^TOKEN ` names a secret, ` api\.example\.com(:\d+)?$` a
 * host), so a deny over either refuses it, an allow list must admit every
 * pair, and an approval covers one pair. Resolves when all pass.
 */
export async function checkGrantPolicy(c: Context<AppEnv>, { control }: RouteDeps, id: string, grant: { secret: string; hosts: readonly string[] }): Promise<void> {
  for (const host of grant.hosts) await gateGrant(view(c), control.store, policyRuntime(control), c.get('who'), id, `${grant.secret} ${host}`);
}
