import { ForkdError } from '@forkd/protocol';
import type { Logger } from '../shared/logger.js';
import type { FleetStore } from './fleet-store.js';
import type { NodeDirectory } from './node-directory.js';

/**
 * Templates copied to where a create needs them (docs/ARCHITECTURE.md,
 * Fleet routing): exported by a node holding the template (through the
 * blob store, incremental and once per version, see exportTemplate),
 * imported on the node placement chose, then placed there so creates find
 * it before that node's next heartbeat lists it. One copy per template and
 * node at a time: the creates of a burst that need the same copy wait for
 * the one that runs.
 */
export class TemplateCopies {
  readonly #store: FleetStore;
  readonly #dir: NodeDirectory;
  readonly #log: Logger | undefined;
  readonly #running = new Map<string, Promise<void>>();

  constructor(store: FleetStore, dir: NodeDirectory, log?: Logger) {
    this.#store = store;
    this.#dir = dir;
    this.#log = log;
  }

  /** `template` onto `target`, from the first of `holders` that exports it. */
  copy(template: string, holders: readonly string[], target: string): Promise<void> {
    const key = `${template}\n${target}`;
    let p = this.#running.get(key);
    if (!p) {
      p = this.#copy(template, holders, target).finally(() => this.#running.delete(key));
      this.#running.set(key, p);
    }
    return p;
  }

  async #copy(template: string, holders: readonly string[], target: string): Promise<void> {
    const t0 = performance.now();
    const manifest = await this.#exportFrom(template, holders);
    const info = await (await this.#dir.client(target)).importTemplate(manifest.key);
    await this.#store.place('template', template, target);
    this.#log?.info('template copied', { template, id: info.id, from: manifest.node, to: target, bytesUploaded: manifest.bytesUploaded, ms: Math.round(performance.now() - t0) });
  }

  /** Its manifest in the blob store, exported by a holder that answers (the next is asked when one is gone). */
  async #exportFrom(template: string, holders: readonly string[]): Promise<{ key: string; node: string; bytesUploaded: number }> {
    let last: unknown;
    for (const node of holders) {
      try {
        const ex = await (await this.#dir.client(node)).exportTemplate(template);
        return { key: ex.manifest, node, bytesUploaded: ex.bytesUploaded };
      } catch (err) {
        if (!(err instanceof ForkdError) || (err.code !== 'UNAVAILABLE' && err.code !== 'TIMEOUT' && err.code !== 'NOT_FOUND')) throw err;
        last = err;
        this.#log?.warn('template export failed; trying another holder', { template, node, error: String(err) });
      }
    }
    throw last ?? new ForkdError('NOT_FOUND', `template ${template} not found on any live node`);
  }
}
