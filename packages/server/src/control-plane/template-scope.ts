import { ForkdError, type TemplateInfo } from '@forkd/protocol';
import type { NodeService } from '../node-contract/index.js';
import type { ControlStore } from '../store/control-store.js';

/**
 * Where a template's per-call policy and default network are kept: under the
 * tenant whose sandboxes they govern and the template's id (TemplateInfo.id,
 * never reused), never under its name. A template deleted and made again
 * under the name (by its tenant or another) is another template, so nothing
 * of the old one (its policy, its sandboxes' lookups) reaches the new one;
 * and a shared template (`base`) has one per tenant, so no tenant's governs
 * another's sandboxes. Tenant names have no `/`.
 */
export function templateKey(tenant: string | undefined, templateId: string): string {
  return `${tenant ?? ''}/${templateId}`;
}

/** A template's id; a node older than template ids lists none: its name was the key. */
export function templateIdOf(t: Pick<TemplateInfo, 'name' | 'id'>): string {
  return t.id ?? t.name;
}

export interface TemplateScopeCaller {
  tenant: string;
  admin: boolean;
}

/**
 * The key of a template setting (policy, default network) a caller reads or
 * writes, the template named as the caller sees it. An owned template's is
 * its owner's, written by the owner's keys or admin keys; a shared one's is
 * per tenant: the caller's own, or with `tenant` (admin keys) another's,
 * written by admin keys only (a tenant lifting its own would be no policy).
 */
export async function templateScope(view: NodeService, store: ControlStore, who: TemplateScopeCaller, name: string, opts: { write: boolean; what: string; tenant?: string | undefined }): Promise<string> {
  const t = (await view.templates()).find((x) => x.name === name);
  if (!t) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
  if (opts.tenant !== undefined && opts.tenant !== who.tenant && !who.admin) throw new ForkdError('PERMISSION_DENIED', `only an admin key reaches another tenant's ${opts.what}`);
  const owner = await store.owner('template', name);
  if (owner !== undefined) {
    if (opts.tenant !== undefined && opts.tenant !== owner) throw new ForkdError('INVALID_ARGUMENT', `template ${name} is its owner's: its ${opts.what} is not per tenant`);
    if (opts.write && !who.admin && owner !== who.tenant) throw new ForkdError('PERMISSION_DENIED', `only the owner of template ${name} (or an admin key) sets its ${opts.what}`);
    return templateKey(owner, templateIdOf(t));
  }
  if (opts.write && !who.admin) throw new ForkdError('PERMISSION_DENIED', `only an admin key sets the ${opts.what} of shared template ${name}`);
  return templateKey(opts.tenant ?? who.tenant, templateIdOf(t));
}
