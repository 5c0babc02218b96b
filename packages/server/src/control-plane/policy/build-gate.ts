import type { BuildTemplateRequest } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import type { ControlStore } from '../../store/control-store.js';
import { templateIdOf, templateKey } from '../template-scope.js';
import { dockerfileCommands } from '../../shared/dockerfile/dockerfile-source.js';
import { policyRefusal } from './exec-gate.js';
import type { PolicyAuditor } from './policy-audit.js';
import { decideExec, type ScopedPolicy } from './policy-evaluator.js';

/** What the builder's command runs as (template-builder.ts): a login bash, root, in its home, no env of its own. */
const buildArgv = (cmd: string) => ['/bin/bash', '-lc', cmd];

/**
 * The policies a template build's commands are held to: those an exec in
 * the build sandbox would be — the building tenant's and its source
 * template's (the build sandbox has no policy of its own), the latter keyed
 * as a sandbox of the tenant made from it would find it (templateKey).
 */
export async function buildPolicies(svc: Pick<NodeService, 'templates'>, store: ControlStore, tenant: string, from: string | undefined): Promise<ScopedPolicy[]> {
  const out: ScopedPolicy[] = [];
  const t = await store.policy('tenant', tenant);
  if (t) out.push({ scope: 'tenant', id: tenant, policy: t });
  const source = from === undefined ? undefined : (await svc.templates()).find((x) => x.name === from);
  const f = source && (await store.policy('template', templateKey(tenant, templateIdOf(source))));
  if (f) out.push({ scope: 'template', id: source.name, policy: f });
  return out;
}

/**
 * Judges a build's setup (`--run`) and start (`--start`) commands before the
 * build starts, as execs of `bash -lc CMD` in the build sandbox: the node
 * runs them without passing the control plane again. A denied one refuses
 * the build (PERMISSION_DENIED naming the rule, audited); one that would
 * need an approver refuses it too — a build has no stream to hold, and a
 * command run unasked while it waits would be worse.
 */
export async function gateBuild(policies: readonly ScopedPolicy[], req: BuildTemplateRequest, audit: PolicyAuditor): Promise<void> {
  if (policies.length === 0) return;
  const commands = [...(req.setup ?? []).map((c) => ({ what: 'setup', argv: buildArgv(c) })), ...(req.start !== undefined ? [{ what: 'start', argv: buildArgv(req.start) }] : [])];
  // A Dockerfile's RUN, CMD and ENTRYPOINT as the argv they run as (a shell form by /bin/sh -c).
  if (req.dockerfile !== undefined) commands.push(...dockerfileCommands(req.dockerfile));
  for (const { what, argv } of commands) {
    const d = decideExec(policies, { argv, program: argv[0]! });
    const line = `template build ${req.name} ${what}: ${argv.at(-1)!}`;
    if (d.action === 'deny') {
      await audit('', 'deny', d.rule, line);
      throw policyRefusal(d.rule);
    }
    if (d.action === 'approve') {
      await audit('', 'deny', d.rule, line);
      throw policyRefusal(d.rule, 'a template build does not wait for an approver');
    }
    await audit('', 'allow', d.rule, line);
  }
}
