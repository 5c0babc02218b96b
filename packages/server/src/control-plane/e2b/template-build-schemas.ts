import { z } from 'zod';

/**
 * The bodies of E2B's template builder API, as the official SDK sends them
 * (e2b ≥ 2.x `Template.build`): validated here, translated by
 * template-steps.ts. Unknown fields are dropped, as E2B's API does.
 */
const Sha256 = z.string().regex(/^[a-f0-9]{64}$/, 'a files hash is 64 lowercase hex digits');

export const RequestBuildBody = z.object({
  /** `alias` or `alias:tag`. */
  name: z.string().min(1).max(200),
  tags: z.array(z.string().max(100)).max(20).optional(),
  cpuCount: z.number().int().min(1).max(64).optional(),
  memoryMB: z.number().int().min(128).max(1 << 20).optional(),
  minFreeDiskMb: z.number().int().min(0).optional(),
});

const E2bStep = z.object({
  type: z.enum(['RUN', 'COPY', 'ENV', 'WORKDIR', 'USER']),
  args: z.array(z.string().max(65536)).max(200),
  force: z.boolean().optional(),
  filesHash: Sha256.optional(),
  forceUpload: z.boolean().nullish(),
  resolveSymlinks: z.boolean().nullish(),
  gzip: z.boolean().nullish(),
});

const RegistryConfig = z.discriminatedUnion('type', [
  z.object({ type: z.literal('registry'), username: z.string().min(1).max(256), password: z.string().min(1).max(16384) }),
  z.looseObject({ type: z.literal('aws') }),
  z.looseObject({ type: z.literal('gcp') }),
]);

export const E2bTemplateBody = z
  .object({
    fromImage: z.string().min(1).max(512).optional(),
    fromTemplate: z.string().min(1).max(200).optional(),
    fromImageRegistry: RegistryConfig.optional(),
    startCmd: z.string().max(65536).optional(),
    readyCmd: z.string().max(65536).optional(),
    steps: z.array(E2bStep).max(300).default([]),
    force: z.boolean().optional(),
  })
  .refine((t) => (t.fromImage === undefined) !== (t.fromTemplate === undefined), 'give fromImage or fromTemplate (one of them)');
export type E2bTemplateBody = z.infer<typeof E2bTemplateBody>;

export const AssignTagsBody = z.object({ target: z.string().min(1).max(200), tags: z.array(z.string().max(100)).min(1).max(20) });
export const RemoveTagsBody = z.object({ name: z.string().min(1).max(200), tags: z.array(z.string().max(100)).min(1).max(20) });
