import type { z } from 'zod';

type Shape = Record<string, z.ZodType>;

/** `memoryMb` → `memory_mb`, at the type level (MCP arguments are snake_case, the API's camelCase). */
export type Snake<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${Snake<T>}` : S;

export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The snake_case tool arguments over protocol fields, and the way back to the API's names. */
export interface SnakeArgs<S extends Shape, K extends keyof S & string> {
  /** A zod raw shape for `registerTool`: the protocol's own schemas under snake_case keys. */
  shape: { [P in K as Snake<P>]: S[P] };
  /** Tool arguments (validated by `shape`) under the API's camelCase names; absent ones left out. */
  toApi(args: object): { [P in K]?: z.output<S[P]> };
}

/**
 * The one place where MCP tool arguments meet the protocol: the fields picked
 * from a protocol zod shape keep their validation (the API's own schemas, so
 * a bad argument is refused the same way before any call), only the names
 * change.
 */
export function snakeArgs<S extends Shape, K extends keyof S & string>(source: S, keys: readonly K[]): SnakeArgs<S, K> {
  const shape: Record<string, z.ZodType> = {};
  const back = new Map<string, string>();
  for (const k of keys) {
    const schema = source[k];
    if (!schema) throw new Error(`no field ${k} in the protocol shape`);
    shape[snakeCase(k)] = schema;
    back.set(snakeCase(k), k);
  }
  return {
    shape: shape as SnakeArgs<S, K>['shape'],
    toApi(args) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(args)) {
        const api = back.get(k);
        if (api !== undefined && v !== undefined) out[api] = v;
      }
      return out as ReturnType<SnakeArgs<S, K>['toApi']>;
    },
  };
}
