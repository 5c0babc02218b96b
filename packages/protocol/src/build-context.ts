import { z } from 'zod';

/**
 * A Dockerfile build's context: a set of files named by the sha256 of their
 * contents. The entries say where each file goes and with what mode; the
 * blobs are the contents, once per distinct sha256, inline (base64) for now.
 * Content-addressed so that a later upload-by-hash (E2B's builder API: a
 * client asks which hashes the server lacks and sends only those) can fill
 * `blobs` from a store instead: the entries stay as they are.
 */
export const CONTEXT_MAX_BYTES = 16 * 1024 * 1024;
export const CONTEXT_MAX_ENTRIES = 20_000;

const Sha256 = z.string().regex(/^[a-f0-9]{64}$/, 'a sha256 is 64 lowercase hex digits');

/** A path relative to the context's root: `/`-separated, no `.`, `..` or empty parts, no NUL. */
export const ContextPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => !p.includes('\0') && p.split('/').every((s) => s !== '' && s !== '.' && s !== '..'), 'a context path is relative, without ., .. or empty parts');

export const ContextEntry = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('file'), path: ContextPath, mode: z.number().int().min(0).max(0o7777), sha256: Sha256 }),
  z.strictObject({ type: z.literal('dir'), path: ContextPath, mode: z.number().int().min(0).max(0o7777) }),
  /** Kept as a link (never followed where the context was read); COPY resolves links on a source's way inside the context. */
  z.strictObject({ type: z.literal('symlink'), path: ContextPath, target: z.string().min(1).max(4096).refine((t) => !t.includes('\0'), 'NUL in a link target') }),
]);
export type ContextEntry = z.infer<typeof ContextEntry>;

export const BuildContext = z.strictObject({
  entries: z.array(ContextEntry).max(CONTEXT_MAX_ENTRIES),
  /** sha256 (hex) → contents (base64). */
  blobs: z.record(Sha256, z.string().max(Math.ceil((CONTEXT_MAX_BYTES * 4) / 3) + 4)).default({}),
});
export type BuildContext = z.input<typeof BuildContext>;

/** A Dockerfile build's step, as its progress reports it (with the line that says the same to a person). */
export const BuildStep = z.object({
  /** 1-based, of `total`. */
  index: z.number().int(),
  total: z.number().int(),
  /** The instruction as written (after line continuations). */
  instruction: z.string(),
  /** `start`: it runs now; `cached`: its result came from the step cache; `done`: it ran. */
  status: z.enum(['start', 'cached', 'done']),
  durationMs: z.number().optional(),
});
export type BuildStep = z.infer<typeof BuildStep>;

/** What a build's progress callback gets: a line of its log, and for a Dockerfile step the step it is about. */
export type BuildProgress = (line: string, step?: BuildStep) => void | Promise<void>;
