import type { SandboxInfo } from '@forkd/protocol';
import { sandboxPath } from '../api/sandboxes.js';
import { TerminalSession } from '../terminal/terminal-session.js';
import { button, h, replace } from '../ui/dom.js';
import type { ViewContext } from '../view.js';

/** xterm.js and its fit addon, loaded on the first terminal (345 KB the other pages never need). */
async function loadXterm() {
  const [{ Terminal }, { FitAddon }] = await Promise.all([import('../vendor/xterm.js'), import('../vendor/addon-fit.js')]);
  return { Terminal, FitAddon };
}

const NOTE = (text: string) => `\r\n\x1b[2m[forkd] ${text}\x1b[0m\r\n`;

/**
 * The sandbox's terminal: xterm.js over the API's stream socket (a login
 * shell, as `forkd shell`). It opens by itself on a running sandbox; a
 * paused one waits for the button (opening wakes it). F6 leaves the
 * terminal for the page (every other key goes to the shell).
 */
export function terminalPanel(ctx: ViewContext, s: SandboxInfo): { el: HTMLElement; dispose(): void } {
  const screen = h('div', { class: 'terminal', role: 'group', 'aria-label': 'Terminal' });
  const status = h('span', { class: 'muted', 'aria-live': 'polite' }, 'loading…');
  const bar = h('div', { class: 'terminal-bar' }, status);
  let stop = () => {};
  let gone = false;
  loadXterm().then(
    (x) => gone || (stop = mount(ctx, s, x, { screen, status, bar })),
    (err: unknown) => (status.textContent = `the terminal did not load: ${String(err)}`),
  );
  const el = h('section', { class: 'panel', 'aria-labelledby': 'terminal-title' }, h('h2', { id: 'terminal-title' }, 'Terminal'), bar, screen, h('small', { class: 'muted' }, 'F6 leaves the terminal.'));
  return { el, dispose: () => ((gone = true), stop()) };
}

interface Parts {
  screen: HTMLElement;
  status: HTMLElement;
  bar: HTMLElement;
}

/** Puts a terminal in `screen` and opens shells in it; returns what stops it. */
function mount(ctx: ViewContext, s: SandboxInfo, { Terminal, FitAddon }: Awaited<ReturnType<typeof loadXterm>>, { screen, status, bar }: Parts): () => void {
  const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000, fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace' });
  const fit = new FitAddon();
  term.loadAddon(fit);
  let session: TerminalSession | undefined;
  let opened = false;

  // Focus moves into the terminal only when asked for (the button): a terminal takes every key but F6.
  const open = (focus = true) => {
    session?.close();
    if (!opened) {
      term.open(screen);
      opened = true;
    }
    fit.fit();
    term.reset();
    status.textContent = 'connecting…';
    const url = ctx.api.socketUrl(`${sandboxPath(s.id)}/stream`, location);
    session = new TerminalSession(() => new WebSocket(url), { cmd: ['bash', '-l'], pty: true, cols: term.cols, rows: term.rows, env: { TERM: 'xterm-256color' } }, {
      output: (b) => {
        status.textContent = 'connected';
        term.write(b);
      },
      note: (t) => term.write(NOTE(t)),
      ended: () => {
        status.textContent = 'ended';
        showOpen('New shell');
      },
    });
    replace(bar, button('New shell', open), status);
    if (focus) term.focus();
  };
  const showOpen = (label: string) => replace(bar, button(label, open), status);

  term.onData((d) => session?.write(d));
  term.onResize(({ cols, rows }) => session?.resize(cols, rows));
  term.attachCustomKeyEventHandler((ev) => {
    if (ev.type === 'keydown' && ev.key === 'F6') {
      (bar.querySelector('button') as HTMLButtonElement | null)?.focus();
      return false;
    }
    return true;
  });
  const resized = new ResizeObserver(() => opened && fit.fit());
  resized.observe(screen);

  if (s.state === 'running') open(false);
  else {
    status.textContent = '';
    showOpen(s.state === 'paused' ? 'Open terminal (resumes the sandbox)' : 'Open terminal');
  }
  return () => {
    resized.disconnect();
    session?.close();
    term.dispose();
  };
}
