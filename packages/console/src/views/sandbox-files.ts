import type { FileEntry } from '@forkd/protocol';
import { downloadFile, joinPath, listDir, parentPath, uploadFile } from '../api/files.js';
import { formatBytes } from '../format.js';
import { button, field, h, replace } from '../ui/dom.js';
import { Notice } from '../ui/notice.js';
import { table } from '../ui/table.js';
import type { ViewContext } from '../view.js';

/** Saves a blob as a file through a temporary object URL (what a download link does). */
function save(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The file browser: a directory's entries (open a directory, download a file), upload into it. */
export function filesPanel(ctx: ViewContext, id: string, start = '/root'): { el: HTMLElement; reload(): void } {
  const notice = new Notice();
  const pathInput = h('input', { name: 'path', value: start, spellcheck: 'false' });
  const list = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  let dir = start;

  const go = (path: string) => {
    notice.clear();
    dir = path;
    pathInput.value = path;
    void show();
  };
  const nameCell = (e: FileEntry) =>
    e.type === 'dir' ? h('a', { href: '#', onclick: (ev) => (ev.preventDefault(), go(e.path)) }, `${e.name}/`) : h('span', {}, e.type === 'symlink' ? `${e.name} → ${e.linkTarget ?? ''}` : e.name);
  const download = (e: FileEntry) =>
    e.type === 'file'
      ? button('Download', () => downloadFile(ctx.api, id, e.path).then((b) => save(b, e.name), (err: unknown) => notice.error(err)), { 'aria-label': `Download ${e.name}`, class: 'quiet' })
      : '';
  const show = async () => {
    try {
      const entries = (await listDir(ctx.api, id, dir)).sort((a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name));
      replace(
        list,
        table(`Files in ${dir}`, [
          { title: 'Name', cell: nameCell },
          { title: 'Size', cell: (e) => (e.type === 'file' ? formatBytes(e.size) : '') },
          { title: 'Modified', cell: (e) => new Date(e.mtime).toLocaleString(), minor: true },
          { title: '', cell: download },
        ], entries, 'Empty directory.'),
      );
    } catch (err) {
      notice.error(err);
      replace(list);
    }
  };

  const file = h('input', { type: 'file', name: 'upload', multiple: true });
  file.addEventListener('change', () => {
    const files = [...(file.files ?? [])];
    if (!files.length) return;
    notice.info(`Uploading ${files.map((f) => f.name).join(', ')}…`);
    Promise.all(files.map((f) => uploadFile(ctx.api, id, joinPath(dir, f.name), f)))
      .then((r) => notice.info(`Uploaded ${r.map((x) => x.path).join(', ')}`), (err: unknown) => notice.error(err))
      .finally(() => {
        file.value = '';
        void show();
      });
  });
  const nav = h('form', { class: 'files-bar' }, field('Directory', pathInput), h('button', { type: 'submit' }, 'Open'), button('Up', () => go(parentPath(dir)), { class: 'quiet' }), button('Refresh', () => void show(), { class: 'quiet' }), field('Upload files', file));
  nav.addEventListener('submit', (ev) => {
    ev.preventDefault();
    go(pathInput.value.trim() || '/');
  });
  void show();
  return { el: h('section', { class: 'panel', 'aria-labelledby': 'files-title' }, h('h2', { id: 'files-title' }, 'Files'), nav, notice.el, list), reload: () => void show() };
}
