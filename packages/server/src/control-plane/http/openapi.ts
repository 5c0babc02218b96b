import { z } from 'zod';
import {
  AuditQuery,
  AuditRecord,
  BuildTemplateRequest,
  CreatedKey,
  CreateKeyRequest,
  CreateSandboxRequest,
  CreateSnapshotRequest,
  ERROR_CODES,
  ExecEvent,
  ExecRequest,
  FileEntry,
  ForkRequest,
  KeyInfo,
  ListQuery,
  ListSandboxesQuery,
  MkdirRequest,
  MoveRequest,
  PathQuery,
  PinRequest,
  PutTenantLimitsRequest,
  TenantLimitsInfo,
  ProcessInfo,
  RemoveQuery,
  RewindRequest,
  SandboxInfo,
  SandboxMetrics,
  SetTimeoutRequest,
  SignalRequest,
  SnapshotInfo,
  StdinRequest,
  TemplateInfo,
  WatchEvent,
  WriteQuery,
} from '@forkd/protocol';

type Schema = z.ZodType;

/** One API operation, described from the same zod schemas that validate it. */
export interface Operation {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Hono-style path (`:id`); rendered as `{id}`. */
  path: string;
  summary: string;
  body?: Schema;
  /** Raw bytes in (file upload). */
  rawBody?: boolean;
  query?: z.ZodObject;
  /** JSON answer, with its status. */
  response?: { status: number; schema?: Schema };
  /** NDJSON stream: the schema of one line. */
  ndjson?: Schema;
  /** Raw bytes out (file download). */
  rawResponse?: boolean;
  /** Needs no API key. */
  public?: boolean;
}

const list = (key: string, item: Schema) => z.object({ [key]: z.array(item) });
const ok = (schema: Schema, status = 200) => ({ status, schema });
const none = { status: 204 };

/** Every route of the REST API. A test checks it against the routes the app really serves. */
export const OPERATIONS: readonly Operation[] = [
  { method: 'get', path: '/v1/health', summary: 'Liveness', response: ok(z.object({ ok: z.boolean() })), public: true },
  { method: 'get', path: '/v1/templates', summary: 'List templates (own and shared)', response: ok(list('templates', TemplateInfo)) },
  { method: 'post', path: '/v1/templates', summary: 'Build a template; progress lines, then done or error', body: BuildTemplateRequest, ndjson: z.union([z.object({ type: z.literal('progress'), line: z.string() }), z.object({ type: z.literal('done'), template: TemplateInfo })]) },
  { method: 'delete', path: '/v1/templates/:name', summary: 'Delete a template', response: none },
  { method: 'post', path: '/v1/sandboxes', summary: 'Create a sandbox', body: CreateSandboxRequest, response: ok(SandboxInfo, 201) },
  { method: 'get', path: '/v1/sandboxes', summary: 'List sandboxes (filters: state, metadata; paged by cursor)', query: ListSandboxesQuery, response: ok(z.object({ sandboxes: z.array(SandboxInfo), nextCursor: z.string().optional() })) },
  { method: 'get', path: '/v1/sandboxes/:id', summary: 'Get a sandbox', response: ok(SandboxInfo) },
  { method: 'delete', path: '/v1/sandboxes/:id', summary: 'Delete a sandbox, its processes and files', response: none },
  { method: 'get', path: '/v1/sandboxes/:id/metrics', summary: 'Resource usage (memory, CPU, processes)', response: ok(SandboxMetrics) },
  { method: 'post', path: '/v1/sandboxes/:id/snapshots', summary: 'Snapshot memory and files (named snapshots are pinned)', body: CreateSnapshotRequest, response: ok(SnapshotInfo, 201) },
  { method: 'get', path: '/v1/sandboxes/:id/snapshots', summary: "The sandbox's timeline", response: ok(list('snapshots', SnapshotInfo)) },
  { method: 'get', path: '/v1/snapshots/:snap', summary: 'Get a snapshot', response: ok(SnapshotInfo) },
  { method: 'post', path: '/v1/snapshots/:snap/pin', summary: 'Pin (never thinned) or unpin a snapshot', body: PinRequest, response: ok(SnapshotInfo) },
  { method: 'delete', path: '/v1/snapshots/:snap', summary: 'Delete a snapshot', response: none },
  { method: 'post', path: '/v1/sandboxes/:id/pause', summary: 'Pause: snapshot, then stop (no CPU or memory used)', response: ok(SandboxInfo) },
  { method: 'post', path: '/v1/sandboxes/:id/timeout', summary: 'Set the lifetime: time out this many seconds from now (0: never)', body: SetTimeoutRequest, response: ok(SandboxInfo) },
  { method: 'post', path: '/v1/sandboxes/:id/resume', summary: 'Resume a paused sandbox in place', response: ok(SandboxInfo) },
  { method: 'post', path: '/v1/sandboxes/:id/rewind', summary: 'Restore memory and files to a snapshot (the state left is snapshotted)', body: RewindRequest, response: ok(SandboxInfo) },
  { method: 'post', path: '/v1/sandboxes/:id/fork', summary: 'Fork a live sandbox (implicit snapshot)', body: ForkRequest, response: ok(list('sandboxes', SandboxInfo), 201) },
  { method: 'post', path: '/v1/snapshots/:snap/fork', summary: 'Fork a snapshot into new sandboxes', body: ForkRequest, response: ok(list('sandboxes', SandboxInfo), 201) },
  { method: 'get', path: '/v1/sandboxes/:id/tree', summary: 'Lineage: the fork tree under a sandbox', response: ok(z.object({ sandbox: SandboxInfo, children: z.array(z.unknown()) })) },
  { method: 'post', path: '/v1/sandboxes/:id/exec', summary: 'Run a command; output streams as NDJSON (background: returns the pid at once)', body: ExecRequest, ndjson: ExecEvent },
  { method: 'get', path: '/v1/sandboxes/:id/processes', summary: 'List processes started through the API', response: ok(list('processes', ProcessInfo)) },
  { method: 'get', path: '/v1/sandboxes/:id/processes/:sel/output', summary: 'Re-attach to a process (pid or tag:NAME)', ndjson: ExecEvent },
  { method: 'post', path: '/v1/sandboxes/:id/processes/:sel/signal', summary: 'Signal a process', body: SignalRequest, response: none },
  { method: 'post', path: '/v1/sandboxes/:id/processes/:sel/stdin', summary: "Write to a process's stdin", body: StdinRequest, response: none },
  { method: 'get', path: '/v1/sandboxes/:id/files', summary: 'Download a file', query: PathQuery, rawResponse: true },
  { method: 'put', path: '/v1/sandboxes/:id/files', summary: 'Upload a file (streamed)', query: WriteQuery, rawBody: true, response: ok(z.object({ path: z.string(), size: z.number() }), 201) },
  { method: 'delete', path: '/v1/sandboxes/:id/files', summary: 'Remove a file or directory', query: RemoveQuery, response: none },
  { method: 'get', path: '/v1/sandboxes/:id/files/list', summary: 'List a directory', query: ListQuery, response: ok(list('entries', FileEntry)) },
  { method: 'get', path: '/v1/sandboxes/:id/files/stat', summary: 'Stat a path', query: PathQuery, response: ok(FileEntry) },
  { method: 'post', path: '/v1/sandboxes/:id/files/mkdir', summary: 'Make a directory (and parents)', body: MkdirRequest, response: none },
  { method: 'post', path: '/v1/sandboxes/:id/files/move', summary: 'Move or rename', body: MoveRequest, response: none },
  { method: 'get', path: '/v1/sandboxes/:id/files/watch', summary: 'Watch a directory; events stream as NDJSON', query: RemoveQuery, ndjson: WatchEvent },
  { method: 'post', path: '/v1/keys', summary: 'Create an API key (admin keys only); the key is shown once', body: CreateKeyRequest, response: ok(CreatedKey, 201) },
  { method: 'get', path: '/v1/keys', summary: 'List API keys', response: ok(list('keys', KeyInfo)) },
  { method: 'delete', path: '/v1/keys/:id', summary: 'Revoke an API key', response: none },
  { method: 'get', path: '/v1/tenants/:tenant/limits', summary: "A tenant's limits and what it uses (admin keys: any tenant; others: their own)", response: ok(TenantLimitsInfo) },
  { method: 'put', path: '/v1/tenants/:tenant/limits', summary: "Replace a tenant's limit overrides (admin keys only): a number sets, null removes, absent means the server's default", body: PutTenantLimitsRequest, response: ok(TenantLimitsInfo) },
  { method: 'get', path: '/v1/audit', summary: 'The audit log, newest first', query: AuditQuery, response: ok(list('records', AuditRecord)) },
];

const ErrorBody = z.object({ error: z.object({ code: z.enum(Object.keys(ERROR_CODES) as [keyof typeof ERROR_CODES]), message: z.string(), details: z.record(z.string(), z.unknown()).optional(), requestId: z.string().optional() }) });

const json = (s: Schema, io: 'input' | 'output') => z.toJSONSchema(s, { io, unrepresentable: 'any' });

/** The OpenAPI 3.1 document of the API, generated from the protocol's zod schemas. */
export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const path = op.path.replace(/:([a-z]+)/g, '{$1}');
    const params = [...op.path.matchAll(/:([a-z]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    if (op.query) {
      const shape = op.query.shape as Record<string, Schema>;
      for (const [name, s] of Object.entries(shape)) params.push({ name, in: 'query', required: !s.safeParse(undefined).success, schema: json(s, 'input') } as never);
    }
    const responses: Record<string, unknown> = {};
    if (op.response) responses[String(op.response.status)] = { description: 'OK', ...(op.response.schema ? { content: { 'application/json': { schema: json(op.response.schema, 'output') } } } : {}) };
    if (op.ndjson) responses['200'] = { description: 'NDJSON stream, one JSON object per line', content: { 'application/x-ndjson': { schema: json(op.ndjson, 'output') } } };
    if (op.rawResponse) responses['200'] = { description: 'The bytes', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } };
    responses.default = { description: 'Error (the code maps to the HTTP status)', content: { 'application/json': { schema: json(ErrorBody, 'output') } } };
    paths[path] ??= {};
    paths[path][op.method] = {
      summary: op.summary,
      ...(params.length ? { parameters: params } : {}),
      ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: json(op.body, 'input') } } } } : {}),
      ...(op.rawBody ? { requestBody: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } } } : {}),
      responses,
      ...(op.public ? { security: [] } : {}),
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'forkd API', version, description: 'Stateful sandboxes: exec, files, snapshots, pause/resume, fork and rewind with live memory.' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' }, apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
    security: [{ bearer: [] }, { apiKey: [] }],
    paths,
  };
}
