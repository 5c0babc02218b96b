import type { SandboxInfo } from '@forkd/protocol';
import { E2bApiError } from './e2b-errors.js';
import { e2bState, templateId, userMetadata, type E2bState } from './sandbox-mapping.js';

/**
 * `GET /v2/sandboxes`: filters, order and paging as E2B's SDK expects them.
 * The cursor is opaque to clients: base64url of the last item's sort key.
 */

export interface ListFilters {
  metadata: Record<string, string>;
  states: E2bState[];
  startedAfter: number | undefined;
  template: string | undefined;
  order: 'asc' | 'desc';
  limit: number;
  nextToken: string | undefined;
}

/**
 * The SDK encodes metadata three times: each key and value with
 * encodeURIComponent, the pairs as a query string, the whole as one query
 * value. The router took one layer off; this takes the other two.
 */
export function decodeMetadataFilter(v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!v) return out;
  for (const [k, val] of new URLSearchParams(v)) {
    try {
      out[decodeURIComponent(k)] = decodeURIComponent(val);
    } catch {
      throw new E2bApiError(400, 'metadata: invalid percent-encoding');
    }
  }
  return out;
}

export function parseListQuery(q: URLSearchParams): ListFilters {
  const states = (q.get('state') ?? '').split(',').filter(Boolean);
  for (const s of states) if (s !== 'running' && s !== 'paused') throw new E2bApiError(400, `state: ${s} is not one of running, paused`);
  const order = q.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new E2bApiError(400, 'order: asc or desc');
  const limitRaw = q.get('limit');
  const limit = limitRaw === null ? 100 : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new E2bApiError(400, 'limit: an integer from 1 to 100');
  const after = q.get('startedAfter');
  const startedAfter = after ? Date.parse(after) : undefined;
  if (startedAfter !== undefined && Number.isNaN(startedAfter)) throw new E2bApiError(400, 'startedAfter: an RFC 3339 time');
  return {
    metadata: decodeMetadataFilter(q.get('metadata') ?? undefined),
    states: states.length ? (states as E2bState[]) : ['running', 'paused'],
    startedAfter,
    template: q.get('template') ?? undefined,
    order,
    limit,
    nextToken: q.get('nextToken') || undefined,
  };
}

interface Cursor {
  t: number;
  id: string;
}

function encodeCursor(s: SandboxInfo): string {
  return Buffer.from(JSON.stringify({ t: Date.parse(s.createdAt), id: s.id })).toString('base64url');
}

function decodeCursor(v: string): Cursor {
  try {
    const c = JSON.parse(Buffer.from(v, 'base64url').toString('utf8')) as Cursor;
    if (typeof c.t === 'number' && typeof c.id === 'string') return c;
  } catch {
    /* answered below */
  }
  throw new E2bApiError(400, 'nextToken: not a token this server gave out');
}

/** One page, and the token of the next when there is one (never on the last page, even a full one). */
export function pageSandboxes(all: SandboxInfo[], f: ListFilters): { items: SandboxInfo[]; nextToken: string | undefined; totalRunning: number } {
  const sign = f.order === 'asc' ? 1 : -1;
  const cmp = (a: { t: number; id: string }, b: { t: number; id: string }) => sign * (a.t - b.t || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const key = (s: SandboxInfo) => ({ t: Date.parse(s.createdAt), id: s.id });
  const matching = all.filter((s) => {
    const st = e2bState(s);
    if (!st || !f.states.includes(st)) return false;
    if (f.startedAfter !== undefined && Date.parse(s.createdAt) < f.startedAfter) return false;
    if (f.template !== undefined && templateId(s) !== f.template && s.template !== f.template) return false;
    const meta = userMetadata(s);
    return Object.entries(f.metadata).every(([k, v]) => meta[k] === v);
  });
  matching.sort((a, b) => cmp(key(a), key(b)));
  const cursor = f.nextToken !== undefined ? decodeCursor(f.nextToken) : undefined;
  const rest = cursor ? matching.filter((s) => cmp(key(s), cursor) > 0) : matching;
  const items = rest.slice(0, f.limit);
  const last = items[items.length - 1];
  return { items, nextToken: rest.length > f.limit && last ? encodeCursor(last) : undefined, totalRunning: matching.filter((s) => e2bState(s) === 'running').length };
}
