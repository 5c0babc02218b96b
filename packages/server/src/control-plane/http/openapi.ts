import { z } from 'zod';
import { ERROR_CODES } from '@forkd/protocol';
import { ROUTES } from './routes/index.js';

type Schema = z.ZodType;

const ErrorBody = z.object({ error: z.object({ code: z.enum(Object.keys(ERROR_CODES) as [keyof typeof ERROR_CODES]), message: z.string(), details: z.record(z.string(), z.unknown()).optional(), requestId: z.string().optional() }) });

const json = (s: Schema, io: 'input' | 'output') => z.toJSONSchema(s, { io, unrepresentable: 'any' });

/** The OpenAPI 3.1 document of the API, generated from the protocol's zod schemas. */
export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of ROUTES) {
    if (op.undocumented) continue;
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
