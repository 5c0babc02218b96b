import type { Context } from 'hono';
import { z } from 'zod';
import { ForkdError } from '@forkd/protocol';
import type { NodeService } from '../../../node-contract/index.js';
import type { Principal } from '../../auth/api-keys.js';
import type { ControlPlane } from '../../control-plane.js';
import type { AppEnv } from '../app-env.js';
import type { Metrics } from '../metrics.js';
import type { SecretService } from '../../secrets/secret-service.js';
import type { Fleet } from '../../../fleet/fleet.js';
import type { Logger } from '../../../shared/logger.js';

type Schema = z.ZodType;

/** What handlers reach beyond their request: the unscoped node (admin-only uses), the control plane, the API's own numbers. */
export interface RouteDeps {
  svc: NodeService;
  control: ControlPlane;
  metrics: Metrics;
  /** Secrets and grants (tenant-scoped by the caller's key). */
  secrets: SecretService;
  logger?: Logger | undefined;
  /** The fleet, when this control plane serves nodes that joined it (absent: one node). */
  fleet?: Fleet | undefined;
  /** Authenticates a route outside `/v1` (the auth middleware covers `/v1`). */
  caller(c: Context<AppEnv>): Promise<Principal>;
}

/**
 * The request's input, validated against the route's own schemas when the
 * handler asks for it: the handler decides the order of its checks (a
 * permission check before the body is read answers the same as ever).
 */
export interface RouteInput<B, Q> {
  /** The JSON body, parsed and validated (INVALID_ARGUMENT otherwise). */
  body(): Promise<B>;
  /** The query string, validated (INVALID_ARGUMENT otherwise). */
  query(): Q;
}

type Infer<S> = S extends Schema ? z.infer<S> : never;

/**
 * One API operation: how it is served and how openapi.json describes it,
 * from the same entry and the same zod schemas (see routes/index.ts).
 */
export interface RouteSpec<B extends Schema | undefined, Q extends z.ZodObject | undefined> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Hono-style path (`:id`); openapi.json renders it as `{id}`. */
  path: string;
  summary: string;
  /** JSON request body. */
  body?: B;
  /** The largest body it reads (default MAX_JSON_BODY, 24 MiB): a route whose bodies are small says so. */
  maxBodyBytes?: number;
  /** Raw bytes in (file upload). */
  rawBody?: boolean;
  query?: Q;
  /** JSON answer, with its status. */
  response?: { status: number; schema?: Schema };
  /** NDJSON stream: the schema of one line. */
  ndjson?: Schema;
  /** Raw bytes out (file download). */
  rawResponse?: boolean;
  /** Needs no API key (mounted before the auth middleware). */
  public?: boolean;
  /** Left out of openapi.json (`/metrics`: Prometheus' text, not the JSON API). */
  undocumented?: boolean;
  /** A route whose response is `none` answers 204 when its handler returns nothing. */
  handler(c: Context<AppEnv>, deps: RouteDeps, input: RouteInput<Infer<B>, Infer<Q>>): Response | void | Promise<Response | void>;
}

/** A route of the table, its schemas' types erased. */
export type Route = RouteSpec<Schema | undefined, z.ZodObject | undefined>;

/** Declares a route with its handler typed by its schemas. */
export function route<B extends Schema | undefined = undefined, Q extends z.ZodObject | undefined = undefined>(spec: RouteSpec<B, Q>): Route {
  return spec as unknown as Route;
}

/** A path parameter of the route's own pattern (always there when the route matched). */
export function param(c: Context<AppEnv>, name: string): string {
  const v = c.req.param(name) as string | undefined;
  if (v === undefined) throw new ForkdError('INTERNAL', `route has no parameter ${name}`);
  return v;
}

/** The caller's tenant-scoped view of the node (set by the auth middleware). */
export const view = (c: Context<AppEnv>): NodeService => c.get('view');

export const list = (key: string, item: Schema) => z.object({ [key]: z.array(item) });
export const ok = (schema: Schema, status = 200) => ({ status, schema });
export const none = { status: 204 };
