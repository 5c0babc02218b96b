import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ForkdClient, SandboxInfo } from '@forkd/sdk';
import { createArgs, listArgs, pauseArgs, resumeArgs, sandboxArgs } from './tool-args.js';
import { guarded, ok } from './tool-result.js';

/** What a model needs to know of a sandbox, snake_case like the arguments. */
export function sandboxSummary(s: SandboxInfo): Record<string, unknown> {
  return { id: s.id, state: s.state, template: s.template, created_at: s.createdAt, ...(s.forkedFrom ? { forked_from: s.forkedFrom } : {}) };
}

const SandboxState = { id: z.string(), state: z.string() };

/** sandbox_create, sandbox_list, sandbox_pause, sandbox_resume, sandbox_kill. */
export function registerSandboxTools(server: McpServer, forkd: ForkdClient): void {
  server.registerTool(
    'sandbox_create',
    {
      title: 'Create a sandbox',
      description:
        'Creates a new isolated Linux sandbox (a full machine: shell, files, processes, network off by default) and returns its id. ' +
        'Use the id with every other tool. A sandbox keeps its state between calls until sandbox_kill.',
      inputSchema: createArgs.shape,
      outputSchema: { id: z.string(), state: z.string(), template: z.string() },
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    (args) =>
      guarded(async () => {
        const sbx = await forkd.sandboxes.create(createArgs.toApi(args));
        return ok({ id: sbx.id, state: sbx.info.state, template: sbx.info.template }, `Created sandbox ${sbx.id} (template ${sbx.info.template}).`);
      }),
  );

  server.registerTool(
    'sandbox_list',
    {
      title: 'List sandboxes',
      description: 'Lists your sandboxes (id, state, template, the sandbox each fork came from), oldest first.',
      inputSchema: listArgs.shape,
      outputSchema: { sandboxes: z.array(z.record(z.string(), z.unknown())) },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const { state } = listArgs.toApi(args);
        const list = await forkd.sandboxes.list(state ? { state: state.split(',') as SandboxInfo['state'][] } : {});
        return ok({ sandboxes: list.map((s) => sandboxSummary(s.info)) });
      }),
  );

  server.registerTool(
    'sandbox_pause',
    {
      title: 'Pause a sandbox',
      description: 'Pauses a sandbox: its memory and files are kept and it uses no CPU or RAM. Any later tool call on it (or sandbox_resume) wakes it exactly where it was.',
      inputSchema: pauseArgs,
      outputSchema: SandboxState,
    },
    ({ sandbox_id, memory }) =>
      guarded(async () => {
        const info = await (await forkd.sandboxes.get(sandbox_id)).pause(memory === false ? { memory: false } : {});
        return ok({ id: info.id, state: info.state }, `Sandbox ${info.id} is ${info.state}.`);
      }),
  );

  server.registerTool(
    'sandbox_resume',
    {
      title: 'Resume a sandbox',
      description: 'Resumes a paused sandbox with its processes as they were.',
      inputSchema: resumeArgs,
      outputSchema: SandboxState,
    },
    ({ sandbox_id, memory }) =>
      guarded(async () => {
        const info = await (await forkd.sandboxes.get(sandbox_id)).resume(memory === false ? { memory: false } : {});
        return ok({ id: info.id, state: info.state }, `Sandbox ${info.id} is ${info.state}.`);
      }),
  );

  server.registerTool(
    'sandbox_kill',
    {
      title: 'Delete a sandbox',
      description: 'Deletes a sandbox for good: its processes, files and snapshots. Forks made from it are not affected. Prefer sandbox_pause to keep it for later.',
      inputSchema: sandboxArgs,
      outputSchema: { id: z.string(), killed: z.boolean() },
      annotations: { destructiveHint: true },
    },
    ({ sandbox_id }) =>
      guarded(async () => {
        await forkd.sandboxes.delete(sandbox_id);
        return ok({ id: sandbox_id, killed: true }, `Deleted sandbox ${sandbox_id}.`);
      }),
  );
}
