import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ForkdClient, SandboxFiles } from '@forkd/sdk';
import { fileListArgs, fileReadArgs, fileWriteArgs } from './tool-args.js';
import { guarded, ok } from './tool-result.js';
import { BoundedText, cutNote, OUTPUT_CAP_BYTES, type CutText } from './output-cut.js';

/** A file read answers at most this much: more would flood a model's context. */
export const FILE_READ_CAP_BYTES = 4 * OUTPUT_CAP_BYTES;

/** The head of a file; reading stops at the cap (the size then comes from its metadata). */
async function readHead(files: SandboxFiles, path: string, cap: number): Promise<CutText> {
  const head = new BoundedText(cap);
  const reader = (await files.readStream(path)).getReader();
  let read = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return head.result();
    head.push(value);
    read += value.length;
    if (read > cap) break;
  }
  await reader.cancel().catch(() => undefined);
  const size = (await files.stat(path)).size;
  const r = head.result();
  return { text: r.text, cutBytes: Math.max(size - Buffer.byteLength(r.text), r.cutBytes) };
}

/** file_read, file_write, file_list. */
export function registerFileTools(server: McpServer, forkd: ForkdClient): void {
  server.registerTool(
    'file_read',
    {
      title: 'Read a file',
      description: `Reads a text file in a sandbox (UTF-8). Files over ${FILE_READ_CAP_BYTES / 1024} KiB are cut with a note; use sandbox_exec with head, tail or grep for parts of large files.`,
      inputSchema: fileReadArgs,
      outputSchema: { content: z.string(), cut_bytes: z.number().optional() },
      annotations: { readOnlyHint: true },
    },
    ({ sandbox_id, path }) =>
      guarded(async () => {
        const sbx = await forkd.sandboxes.get(sandbox_id);
        const r = await readHead(sbx.files, path, FILE_READ_CAP_BYTES);
        const content = r.text + (r.cutBytes ? cutNote(path, r.cutBytes) : '');
        return ok({ content, ...(r.cutBytes ? { cut_bytes: r.cutBytes } : {}) }, content);
      }),
  );

  server.registerTool(
    'file_write',
    {
      title: 'Write a file',
      description: 'Creates or replaces a file in a sandbox with the given text (parent folders are made). To change a file you cannot easily redo, snapshot_create first.',
      inputSchema: fileWriteArgs,
      outputSchema: { path: z.string(), size: z.number() },
      annotations: { destructiveHint: true },
    },
    ({ sandbox_id, path, content }) =>
      guarded(async () => {
        const sbx = await forkd.sandboxes.get(sandbox_id);
        const r = await sbx.files.write(path, content);
        return ok({ path: r.path, size: r.size }, `Wrote ${r.size} bytes to ${r.path}.`);
      }),
  );

  server.registerTool(
    'file_list',
    {
      title: 'List a folder',
      description: 'Lists a folder in a sandbox: name, type (file, dir, symlink), size and modification time of each entry; depth > 1 goes into sub-folders.',
      inputSchema: fileListArgs,
      outputSchema: { entries: z.array(z.object({ path: z.string(), type: z.string(), size: z.number(), mtime: z.string() })) },
      annotations: { readOnlyHint: true },
    },
    ({ sandbox_id, path, depth }) =>
      guarded(async () => {
        const sbx = await forkd.sandboxes.get(sandbox_id);
        const list = await sbx.files.list(path, { depth });
        const entries = list.map((e) => ({ path: e.path, type: e.type, size: e.size, mtime: e.mtime }));
        return ok({ entries }, entries.map((e) => `${e.type === 'dir' ? 'd' : e.type === 'symlink' ? 'l' : '-'} ${String(e.size).padStart(10)} ${e.path}`).join('\n') || '(empty)');
      }),
  );
}
