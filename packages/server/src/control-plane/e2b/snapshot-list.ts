import { ForkdError, type SnapshotInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { E2bApiError } from './e2b-errors.js';

/**
 * `GET /snapshots`: the caller's explicit snapshots (forkd's rolling and
 * internal ones are its timeline, not E2B snapshots), newest first, paged by
 * an opaque offset token.
 */
export async function listSnapshots(view: NodeService, q: URLSearchParams): Promise<{ items: { snapshotID: string; names: string[] }[]; nextToken: string | undefined }> {
  const sandboxId = q.get('sandboxID') || undefined;
  const name = q.get('name') || undefined;
  const limitRaw = q.get('limit');
  const limit = limitRaw === null ? 100 : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new E2bApiError(400, 'limit: an integer from 1 to 1000');
  const token = q.get('nextToken');
  const offset = token ? Number(Buffer.from(token, 'base64url').toString('utf8')) : 0;
  if (!Number.isInteger(offset) || offset < 0) throw new E2bApiError(400, 'nextToken: not a token this server gave out');

  let snaps: SnapshotInfo[] = [];
  if (sandboxId) {
    try {
      snaps = await view.timeline(sandboxId);
    } catch (err) {
      if (!(err instanceof ForkdError && err.code === 'NOT_FOUND')) throw err;
    }
  } else {
    for (const s of await view.list()) snaps.push(...(await view.timeline(s.id).catch(() => [])));
  }
  const mine = snaps.filter((s) => s.reason === 'manual' && (name === undefined || s.name === name || s.id === name));
  mine.sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || (a.id < b.id ? -1 : 1));
  const items = mine.slice(offset, offset + limit).map((s) => ({ snapshotID: s.id, names: s.name ? [s.name] : [] }));
  const next = offset + limit < mine.length ? Buffer.from(String(offset + limit)).toString('base64url') : undefined;
  return { items, nextToken: next };
}
