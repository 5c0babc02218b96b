import { toForkdError } from '@forkd/protocol';
import type { SpanAttributes, Tracer } from '../shared/tracer.js';
import type { NodeService } from './node-service.js';

/** The lifecycle operations timed and traced, by NodeService method: the value is the metric label and the span's name suffix. */
export const LIFECYCLE_OPERATIONS = {
  create: 'create',
  snapshot: 'snapshot',
  pause: 'pause',
  resume: 'resume',
  fork: 'fork',
  rewind: 'rewind',
  delete: 'delete',
  buildTemplate: 'template_build',
} as const satisfies Partial<Record<keyof NodeService, string>>;

export type LifecycleOperation = (typeof LIFECYCLE_OPERATIONS)[keyof typeof LIFECYCLE_OPERATIONS];

/** Where each lifecycle operation's duration goes; `result` is `ok` or the ForkdError code (a closed set). */
export interface LifecycleObserver {
  lifecycle(operation: LifecycleOperation, result: string, seconds: number): void;
}

/** Identifying attributes of a call: its sandbox, snapshot or template (bounded strings, never a request body). */
function callAttributes(method: string, args: readonly unknown[]): SpanAttributes {
  const [first] = args;
  if (method === 'buildTemplate') return { 'forkd.template': String((first as { name?: unknown }).name ?? '') };
  if (method === 'create') return { 'forkd.template': String((first as { template?: unknown }).template ?? 'base') };
  if (method === 'fork') return { 'forkd.source': String(first), 'forkd.count': Number(args[1]) };
  return typeof first === 'string' ? { 'forkd.sandbox_id': first } : {};
}

/**
 * The node with its lifecycle operations timed (`observer`) and traced
 * (`tracer`): the one place both are measured, as callers of the API (REST,
 * E2B, MCP) see them. Every other method is the node's own.
 */
export function instrumentNode(svc: NodeService, observer: LifecycleObserver, tracer: Tracer): NodeService {
  const ops = LIFECYCLE_OPERATIONS as Record<string, LifecycleOperation>;
  return new Proxy(svc, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop);
      if (typeof v !== 'function') return v;
      const op = typeof prop === 'string' ? ops[prop] : undefined;
      if (!op) return v.bind(target);
      return async (...args: unknown[]) => {
        const t0 = performance.now();
        let result = 'ok';
        try {
          return await tracer.span(`forkd.${op}`, callAttributes(prop as string, args), () => (v as (...a: unknown[]) => Promise<unknown>).apply(target, args));
        } catch (err) {
          result = toForkdError(err).code;
          throw err;
        } finally {
          observer.lifecycle(op, result, (performance.now() - t0) / 1000);
        }
      };
    },
  });
}
