import { posix } from 'node:path';
import type { FileEntry, WatchEvent } from '@forkd/protocol';
import { forwardTo, type NodeService } from '../../node-contract/index.js';
import type { ControlStore } from '../../store/control-store.js';
import { buildPolicies, gateBuild } from './build-gate.js';
import { gatedSpawn, policyRefusal } from './exec-gate.js';
import { policyAuditor, type PolicyCaller } from './policy-audit.js';
import { aboveOrAt } from './path-prefix.js';
import { decideFile, isHidden, type FileAccess, type ScopedPolicy } from './policy-evaluator.js';
import type { PolicyRuntime, SandboxTemplate } from './policy-runtime.js';
import { templateKey } from '../template-scope.js';
import { sourceTemplateOf } from '../../shared/dockerfile/dockerfile-source.js';

/**
 * The policies that apply to a sandbox: its tenant's, its template's, its own
 * (in that order). Its template's is looked up by its tenant and the id of
 * the template it was made from (templateKey), never by name: a later
 * template of the name, or another tenant's policy on a shared one, is not
 * its template's.
 */
export async function sandboxPolicies(svc: NodeService, store: ControlStore, id: string, templateOf?: Map<string, SandboxTemplate>): Promise<ScopedPolicy[]> {
  const out: ScopedPolicy[] = [];
  const tenant = await store.owner('sandbox', id);
  if (tenant !== undefined) {
    const p = await store.policy('tenant', tenant);
    if (p) out.push({ scope: 'tenant', id: tenant, policy: p });
  }
  let template = templateOf?.get(id);
  if (template === undefined) {
    try {
      const s = await svc.get(id);
      template = { name: s.template, id: s.templateId ?? s.template };
      // Sandboxes the node deletes itself (lifetimes) leave entries behind: bounded by starting over.
      if (templateOf && templateOf.size >= 100_000) templateOf.clear();
      templateOf?.set(id, template);
    } catch {
      /* unknown: the call itself answers NOT_FOUND */
    }
  }
  if (template !== undefined) {
    const p = await store.policy('template', templateKey(tenant, template.id));
    if (p) out.push({ scope: 'template', id: template.name, policy: p });
  }
  const own = await store.policy('sandbox', id);
  if (own) out.push({ scope: 'sandbox', id, policy: own });
  return out;
}

/**
 * The NodeService with the per-call policies in front of every exec and
 * file call (see docs/SECURITY.md, "Per-call policy"): one wrapper in the
 * per-caller chain, so REST, the E2B layer and anything on the SDK get it.
 * Ownership is checked before (TenantView wraps this).
 */
export function policyGate(svc: NodeService, store: ControlStore, runtime: PolicyRuntime, who: PolicyCaller): NodeService {
  const audit = policyAuditor(store, who);
  const policies = (id: string) => sandboxPolicies(svc, store, id, runtime.templateOf);
  /** `tree`: also refused when the path holds a protected prefix (a recursive remove or a move of a parent would take it along). */
  const guard = async (id: string, access: FileAccess, op: string, path: string, tree = false) => {
    const ps = await policies(id);
    if (ps.length === 0) return ps;
    let d = decideFile(ps, access, path);
    if (d.action === 'allow' && tree) {
      for (const p of ps) {
        const protectedPrefixes = [...(p.policy.files?.hidden ?? []), ...(p.policy.files?.readOnly ?? [])];
        const hit = protectedPrefixes.find((x) => aboveOrAt(path, x));
        if (hit !== undefined) {
          d = { action: 'deny', rule: `${p.scope}:files.${(p.policy.files?.hidden ?? []).includes(hit) ? 'hidden' : 'readOnly'} ${JSON.stringify(hit)} (inside ${path})` };
          break;
        }
      }
    }
    if (d.action === 'deny') {
      await audit(id, 'deny', d.rule, `${op} ${path}`);
      throw policyRefusal(d.rule);
    }
    return ps;
  };
  const visible = (ps: ScopedPolicy[], entries: FileEntry[]) => (ps.length === 0 ? entries : entries.filter((e) => !isHidden(ps, e.path)));

  return {
    // Calls the policy has nothing to say about (attaching to, signalling or feeding a process it let start; lifecycle).
    ...forwardTo(svc),
    async spawn(id, opts, handlers) {
      const ps = await policies(id);
      if (ps.length === 0) return svc.spawn(id, opts, handlers);
      return gatedSpawn({ svc, runtime, audit, tenant: who.tenant }, ps, id, opts, handlers);
    },
    async readFile(id, path) {
      await guard(id, 'read', 'read', path);
      return svc.readFile(id, path);
    },
    async stat(id, path) {
      await guard(id, 'read', 'stat', path);
      return svc.stat(id, path);
    },
    async listDir(id, path, depth) {
      const ps = await guard(id, 'read', 'list', path);
      return visible(ps, await svc.listDir(id, path, depth));
    },
    async watch(id, path, recursive, onEvent) {
      const ps = await guard(id, 'read', 'watch', path);
      return svc.watch(id, path, recursive, ps.length === 0 ? onEvent : (e: WatchEvent) => (isHidden(ps, posix.join(path, e.name)) ? undefined : onEvent(e)));
    },
    async writeFile(id, path, data, opts) {
      await guard(id, 'write', 'write', path);
      return svc.writeFile(id, path, data, opts);
    },
    async mkdir(id, path, user) {
      await guard(id, 'write', 'mkdir', path);
      return svc.mkdir(id, path, user);
    },
    async move(id, from, to) {
      await guard(id, 'write', 'move', from, true);
      await guard(id, 'write', 'move', to, true);
      return svc.move(id, from, to);
    },
    async remove(id, path, recursive) {
      await guard(id, 'write', 'remove', path, true);
      return svc.remove(id, path, recursive);
    },
    /** A build's setup and start commands are judged before it starts: the node runs them without coming back here. */
    async buildTemplate(req, progress, claim) {
      // From an image (or a Dockerfile FROM an image): the tenant's policy only (there is no template to take one from).
      await gateBuild(await buildPolicies(svc, store, who.tenant, sourceTemplateOf(req)), req, audit);
      return svc.buildTemplate(req, progress, claim);
    },
    /** Forks inherit their source sandbox's own policy (a copy: later changes to either do not carry over). */
    async fork(source, count, claim, opts) {
      const from = source.startsWith('snap-') ? (await svc.getSnapshot(source)).sandboxId : source;
      const own = await store.policy('sandbox', from);
      // Copied as each fork is claimed, before the node records it: no fork is ever reachable without it.
      return svc.fork(source, count, async (fid) => {
        await claim?.(fid);
        if (own) await store.setPolicy('sandbox', fid, own);
      }, opts);
    },
    async delete(id) {
      await svc.delete(id);
      runtime.templateOf.delete(id);
      await store.setPolicy('sandbox', id, {});
    },
    // A deleted template's policy stays under its id: the sandboxes made from it stay under it, and no later template has that id.
  };
}
