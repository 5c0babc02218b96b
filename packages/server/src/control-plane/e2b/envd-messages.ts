import { z } from 'zod';
import { RpcError } from './e2b-errors.js';

/**
 * The JSON forms (proto3 JSON, as protobuf-es writes them) of the envd
 * messages forkd reads. Missing fields default, unknown ones are ignored;
 * snake_case names are accepted next to lowerCamelCase.
 */

const u32 = z.coerce.number().int().min(0).max(2 ** 32 - 1);

export const Selector = z.looseObject({ pid: u32.optional(), tag: z.string().max(256).optional() }).refine((s) => s.pid !== undefined || s.tag !== undefined, 'process: a pid or a tag');
export type Selector = z.infer<typeof Selector>;

const PtySize = z.looseObject({ size: z.looseObject({ cols: u32.optional(), rows: u32.optional() }).nullish() });

export const StartRequest = z.looseObject({
  process: z.looseObject({
    cmd: z.string().min(1),
    args: z.array(z.string()).default([]),
    envs: z.record(z.string(), z.string()).default({}),
    cwd: z.string().nullish(),
  }),
  pty: PtySize.nullish(),
  tag: z.string().nullish(),
  stdin: z.boolean().nullish(),
});

export const ProcessRequest = z.looseObject({ process: Selector });

export const SendInputRequest = z.looseObject({
  process: Selector,
  input: z.looseObject({ stdin: z.string().optional(), pty: z.string().optional() }).default({}),
});

export const SendSignalRequest = z.looseObject({ process: Selector, signal: z.union([z.string(), z.number()]).default(0) });

export const UpdateRequest = z.looseObject({ process: Selector, pty: PtySize.nullish() });

export const PathRequest = z.looseObject({ path: z.string().default('') });
export const ListDirRequest = z.looseObject({ path: z.string().default(''), depth: u32.default(1) });
export const MoveRequest = z.looseObject({ source: z.string().default(''), destination: z.string().default('') });
export const WatchDirRequest = z.preprocess(
  (v) => {
    if (!v || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    return { ...o, includeEntry: o.includeEntry ?? o.include_entry, allowNetworkMounts: o.allowNetworkMounts ?? o.allow_network_mounts };
  },
  z.looseObject({ path: z.string().default(''), recursive: z.boolean().default(false), includeEntry: z.boolean().default(false), allowNetworkMounts: z.boolean().default(false) }),
);

/** Parses a request message; a malformed one is invalid_argument. */
export function parseMessage<T extends z.ZodType>(schema: T, msg: unknown): z.infer<T> {
  const r = schema.safeParse(msg ?? {});
  if (!r.success) throw new RpcError('invalid_argument', r.error.issues.map((i) => `${i.path.join('.') || 'message'}: ${i.message}`).join('; '));
  return r.data;
}
