import { existsSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO_ROOT } from '../shared/config.js';
import { api } from './http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from './daemon-process.js';
import { disposeNodeDir, testConfig } from './test-node.js';

/** Debian's chromium (`forkd setup` installs it for the tests); FORKD_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.FORKD_CHROMIUM || '/usr/bin/chromium';

/** Where the console tests' screenshots go (gitignored); each run's test prints it. */
export const SCREENSHOT_DIR = join(REPO_ROOT, 'test-results/console');

export const LAPTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export type ConsolePage = Page & { errors: string[]; dialogs: Array<{ type: string; message: string }> };

export interface ConsoleHarness {
  daemon: DaemonProcess;
  /** The console's URL (`forkd serve`'s root). */
  url: string;
  browser: Browser;
  /** A new key of `tenant` (made with the daemon's admin key). */
  key(tenant: string): Promise<string>;
  /** A fresh browser context and page (its own sessionStorage); failures in the page's scripts are kept in `errors`, dialogs (accepted) in `dialogs`. */
  page(viewport?: { width: number; height: number }): Promise<ConsolePage>;
  /** Opens the console and signs in with `key`; resolves once the sandboxes page shows. */
  signIn(page: Page, key: string): Promise<void>;
  /** Saves a full-page screenshot as SCREENSHOT_DIR/NAME.png; returns its path. */
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

/** Whether the browser the console tests drive is installed. */
export const hasChromium = existsSync(CHROMIUM);

/**
 * A real `forkd serve` (private pool, state and network names, as every
 * e2e test) and one headless Chromium for the whole test file.
 * Chromium runs with --no-sandbox: the tests run as root, where Chromium's
 * own sandbox refuses to start (docs/SECURITY.md, "The web console").
 */
export async function startConsoleHarness(name: string, env: NodeJS.ProcessEnv = {}): Promise<ConsoleHarness> {
  const dir = await mkdtemp(join(tmpdir(), `forkd-${name}-`));
  const cfg = testConfig(dir);
  let daemon: DaemonProcess | undefined;
  let browser: Browser | undefined;
  try {
    daemon = await startDaemonProcess({ ...cfg.env, ...env });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  } catch (err) {
    await stopDaemonProcess(daemon);
    await disposeNodeDir(undefined, dir, cfg.config);
    throw err;
  }
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  console.log(`console screenshots: ${SCREENSHOT_DIR}`);
  const d = daemon;
  const b = browser;
  return {
    daemon: d,
    url: d.url,
    browser: b,
    key: async (tenant) => (await api(d, 'POST', '/v1/keys', { tenant })).json.key as string,
    async page(viewport = LAPTOP) {
      const context = await b.newContext({ viewport });
      const page: ConsolePage = Object.assign(await context.newPage(), { errors: [] as string[], dialogs: [] as ConsolePage['dialogs'] });
      page.on('pageerror', (e) => page.errors.push(String(e)));
      // CSP refusals and failed module loads show up as console errors.
      page.on('console', (m) => void (m.type() === 'error' && page.errors.push(`${m.text()} (${m.location().url}, on ${page.url()})`)));
      page.on('dialog', (dlg) => {
        page.dialogs.push({ type: dlg.type(), message: dlg.message() });
        void dlg.accept();
      });
      return page;
    },
    async signIn(page, key) {
      await page.goto(`${d.url}/`);
      await page.getByLabel('API key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
    },
    async screenshot(page, shot) {
      const path = join(SCREENSHOT_DIR, `${shot}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    async close() {
      await b.close().catch(() => {});
      await stopDaemonProcess(d);
      await disposeNodeDir(undefined, dir, cfg.config);
    },
  };
}
