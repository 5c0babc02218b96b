import { ForkdError, type ListSandboxesQuery, type SandboxInfo } from '@forkd/protocol';

/** Opaque to clients: the position after the last sandbox of a page (creation time, then id). */
function encodeCursor(s: SandboxInfo): string {
  return Buffer.from(`${s.createdAt}|${s.id}`).toString('base64url');
}

function decodeCursor(c: string): [string, string] {
  const [at, id] = Buffer.from(c, 'base64url').toString().split('|');
  if (!at || !id) throw new ForkdError('INVALID_ARGUMENT', 'cursor: the nextCursor of the previous page');
  return [at, id];
}

/** `k=v&k2=v2`, URL-encoded as e2b sends it. */
function parseMetadata(m: string): Array<[string, string]> {
  return [...new URLSearchParams(m).entries()];
}

/** Filters and pages a listing, oldest first; a page stays stable while sandboxes come and go. */
export function listPage(all: readonly SandboxInfo[], q: ListSandboxesQuery): { sandboxes: SandboxInfo[]; nextCursor?: string } {
  const states = q.state ? new Set(q.state.split(',')) : undefined;
  const meta = q.metadata ? parseMetadata(q.metadata) : [];
  const key = (s: SandboxInfo) => `${s.createdAt}|${s.id}`;
  let items = all
    .filter((s) => (!states || states.has(s.state)) && meta.every(([k, v]) => s.metadata[k] === v))
    .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  if (q.cursor) {
    const after = decodeCursor(q.cursor).join('|');
    items = items.filter((s) => key(s) > after);
  }
  const page = items.slice(0, q.limit);
  return { sandboxes: page, ...(items.length > q.limit ? { nextCursor: encodeCursor(page[page.length - 1]!) } : {}) };
}
