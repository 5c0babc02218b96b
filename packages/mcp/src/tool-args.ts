import { z } from 'zod';
import { CreateSandboxRequest, CreateSnapshotRequest, ExecExtras, ForkRequest, ListQuery, ListSandboxesQuery, PathQuery, PauseRequest, ResumeRequest, RewindRequest, SandboxId, SpawnRequest } from '@forkd/protocol';
import { snakeArgs } from './snake-args.js';

/**
 * Every tool's arguments, from the protocol's zod schemas (the API's
 * validation) under snake_case names (snake-args.ts). Only the descriptions,
 * written for a model, are added here.
 */
const sandboxId = { sandbox_id: SandboxId.describe('The sandbox, e.g. sbx-0123456789ab (from sandbox_create or sandbox_list).') };
const snapshotId = RewindRequest.shape.snapshot;

export const createArgs = snakeArgs(CreateSandboxRequest.shape, ['template', 'memoryMb', 'cpus', 'diskMb', 'env', 'metadata', 'timeoutSeconds', 'network']);
export const listArgs = snakeArgs(ListSandboxesQuery.shape, ['state']);

export const execArgs = {
  ...sandboxId,
  command: SpawnRequest.shape.command.unwrap().describe('A shell command line, run by `bash -lc` as root, e.g. "cd /app && npm test".'),
  ...snakeArgs(SpawnRequest.shape, ['cwd', 'env']).shape,
  ...snakeArgs(ExecExtras.shape, ['timeoutMs']).shape,
};
export const execApi = snakeArgs({ ...SpawnRequest.shape, ...ExecExtras.shape }, ['cwd', 'env', 'timeoutMs']);

export const fileReadArgs = { ...sandboxId, path: PathQuery.shape.path.describe('Absolute path in the sandbox.') };
export const fileWriteArgs = {
  ...sandboxId,
  path: PathQuery.shape.path.describe('Absolute path in the sandbox; parent folders are made.'),
  // The body of PUT /files, which has no zod schema of its own (it is raw bytes there).
  content: z.string().max(16 * 1024 * 1024).describe('The whole new content of the file (UTF-8 text).'),
};
export const fileListArgs = { ...sandboxId, path: ListQuery.shape.path.describe('Absolute folder path in the sandbox.'), depth: ListQuery.shape.depth };

export const snapshotCreateArgs = { ...sandboxId, ...snakeArgs(CreateSnapshotRequest.shape, ['name']).shape };
export const forkArgs = {
  ...sandboxId,
  snapshot_id: snapshotId.optional().describe('Fork from this snapshot of the sandbox instead of its state now.'),
  ...snakeArgs(ForkRequest.shape, ['count']).shape,
};
export const rewindArgs = { ...sandboxId, snapshot_id: snapshotId.describe('The snapshot to go back to (from snapshot_create or snapshot_list).') };
export const pauseArgs = { ...sandboxId, ...snakeArgs(PauseRequest.shape, ['memory']).shape };
export const resumeArgs = { ...sandboxId, ...snakeArgs(ResumeRequest.shape, ['memory']).shape };
export const sandboxArgs = sandboxId;
