import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ForkdError, type ForkdClient, type SnapshotInfo } from '@forkd/sdk';
import { forkArgs, rewindArgs, sandboxArgs, snapshotCreateArgs } from './tool-args.js';
import { guarded, ok } from './tool-result.js';

export function snapshotSummary(s: SnapshotInfo): Record<string, unknown> {
  return { id: s.id, created_at: s.createdAt, reason: s.reason, ...(s.name ? { name: s.name } : {}), ...(s.parentId ? { parent_id: s.parentId } : {}), pinned: s.pinned };
}

/** snapshot_create, snapshot_list, sandbox_rewind, sandbox_fork: the checkpoint-and-rewind tools. */
export function registerTimelineTools(server: McpServer, forkd: ForkdClient): void {
  server.registerTool(
    'snapshot_create',
    {
      title: 'Checkpoint a sandbox',
      description:
        'Takes a snapshot of a sandbox: its memory (running processes included) and all its files, in about a second; the sandbox keeps running. ' +
        'Do this BEFORE any risky or hard-to-undo step (deleting or rewriting files, migrations, upgrades, experiments). ' +
        'If the step goes wrong, sandbox_rewind with the returned id brings everything back; sandbox_fork from it tries alternatives side by side.',
      inputSchema: snapshotCreateArgs,
      outputSchema: { id: z.string() },
    },
    ({ sandbox_id, name }) =>
      guarded(async () => {
        const sbx = await forkd.sandboxes.get(sandbox_id);
        const snap = await sbx.snapshot(name !== undefined ? { name } : {});
        return ok({ id: snap.id }, `Snapshot ${snap.id} of ${sandbox_id}${snap.name ? ` (${snap.name})` : ''}. Rewind to it with sandbox_rewind.`);
      }),
  );

  server.registerTool(
    'snapshot_list',
    {
      title: 'Timeline of a sandbox',
      description: 'Lists the snapshots of a sandbox, oldest first (its timeline): yours, and the automatic ones (periodic, before a rewind or pause). Any of them can be rewound to or forked from.',
      inputSchema: sandboxArgs,
      outputSchema: { snapshots: z.array(z.record(z.string(), z.unknown())) },
      annotations: { readOnlyHint: true },
    },
    ({ sandbox_id }) =>
      guarded(async () => {
        const sbx = await forkd.sandboxes.get(sandbox_id);
        return ok({ snapshots: (await sbx.timeline()).map(snapshotSummary) });
      }),
  );

  server.registerTool(
    'sandbox_rewind',
    {
      title: 'Rewind a sandbox',
      description:
        'Puts a sandbox back exactly as it was at one of its snapshots: files and memory (running processes too). Use it when a step went wrong. ' +
        'Nothing is lost: the state it leaves is snapshotted first, so a rewind can itself be undone (see snapshot_list).',
      inputSchema: rewindArgs,
      outputSchema: { id: z.string(), state: z.string() },
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    ({ sandbox_id, snapshot_id }) =>
      guarded(async () => {
        const info = await (await forkd.sandboxes.get(sandbox_id)).rewind(snapshot_id);
        return ok({ id: info.id, state: info.state }, `Sandbox ${info.id} rewound to ${snapshot_id}.`);
      }),
  );

  server.registerTool(
    'sandbox_fork',
    {
      title: 'Fork a sandbox',
      description:
        'Makes `count` independent copies of a sandbox (memory and files) as it is now, or as it was at one of its snapshots, and returns their ids; the original keeps running untouched. ' +
        'Use forks to explore alternatives in parallel: try a different approach in each, compare, keep the best and sandbox_kill the rest.',
      inputSchema: forkArgs,
      outputSchema: { ids: z.array(z.string()) },
    },
    ({ sandbox_id, snapshot_id, count }) =>
      guarded(async () => {
        let forks;
        if (snapshot_id !== undefined) {
          // The snapshot must be this sandbox's own: a fork names both, and a mismatch would be a confusing success.
          const snap = await forkd.snapshots.get(snapshot_id);
          if (snap.sandboxId !== sandbox_id) throw new ForkdError('INVALID_ARGUMENT', `snapshot ${snapshot_id} is not a snapshot of ${sandbox_id}`);
          forks = await forkd.snapshots.fork(snapshot_id, { count });
        } else forks = await (await forkd.sandboxes.get(sandbox_id)).fork({ count });
        const ids = forks.map((f) => f.id);
        return ok({ ids }, `Forked ${sandbox_id} into ${ids.join(', ')}.`);
      }),
  );
}
