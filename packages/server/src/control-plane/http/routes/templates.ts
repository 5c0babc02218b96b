import { z } from 'zod';
import { BuildStep, BuildTemplateRequest, TemplateInfo } from '@forkd/protocol';
import { NDJSON_HEADERS, ndjsonStream } from '../../../shared/ndjson-stream.js';
import { NetworkPolicies } from '../../network/network-policies.js';
import { templateIdOf, templateKey } from '../../template-scope.js';
import { streamError } from './process-stream.js';
import { list, none, ok, param, route, view as v } from './route.js';

/** Templates: the tenant's own and the shared ones. */
export const TEMPLATE_ROUTES = [
  route({
    method: 'get',
    path: '/v1/templates',
    summary: 'List templates (own and shared)',
    response: ok(list('templates', TemplateInfo)),
    handler: async (c) => c.json({ templates: await v(c).templates() }),
  }),
  // Builds take minutes: progress lines stream as NDJSON (a Dockerfile's with their step), then `done` or `error`.
  route({
    method: 'post',
    path: '/v1/templates',
    summary: 'Build a template; progress lines, then done or error',
    body: BuildTemplateRequest,
    ndjson: z.union([z.object({ type: z.literal('progress'), line: z.string(), step: BuildStep.optional() }), z.object({ type: z.literal('done'), template: TemplateInfo })]),
    handler: async (c, { control }, input) => {
      // The default network is the control plane's (control store), not the node's.
      const { network, ...req } = await input.body();
      const out = ndjsonStream(() => {});
      void v(c)
        // Awaited: a client that reads slowly slows the build's output, not the daemon's memory.
        .buildTemplate(req, (line, step) => out.write({ type: 'progress', line, ...(step ? { step } : {}) }))
        .then(async (template) => {
          // The builder's: the owner of a template it built, its own tenant's on a shared one an admin key rebuilt.
          await new NetworkPolicies(control.store).setTemplate(templateKey(c.get('who').tenant, templateIdOf(template)), network);
          return template;
        })
        .then(
          (template) => out.write({ type: 'done', template }),
          (err) => out.write({ type: 'error', error: streamError(c, err) }),
        )
        .finally(() => out.close());
      return c.body(out.stream, 200, NDJSON_HEADERS);
    },
  }),
  route({
    method: 'delete',
    path: '/v1/templates/:name',
    summary: 'Delete a template',
    response: none,
    handler: async (c) => {
      // Its default network goes with it (networkGate); its policy stays with the sandboxes made from it (policyGate).
      await v(c).deleteTemplate(param(c, 'name'));
    },
  }),
];
