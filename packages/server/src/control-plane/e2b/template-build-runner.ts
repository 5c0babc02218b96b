import { ForkdError, type BuildProgress, type BuildStep, type BuildTemplateRequest } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';
import type { TemplateBuildLog, TemplateBuildRecord, TemplateBuildRecords } from '../../store/template-build-records.js';

/** A build's log is kept to this many entries (the rest is said to be cut), each line to this many characters. */
export const MAX_LOG_ENTRIES = 20_000;
const MAX_LINE = 4096;
const FLUSH_MS = 250;
/** A building build's record moves at least this often; one silent for STALE_MS was cut (its replica restarted). */
export const HEARTBEAT_MS = 15_000;
export const STALE_MS = 90_000;

export interface BuildRun {
  view: NodeService;
  records: TemplateBuildRecords;
  logger: Logger;
  build: TemplateBuildRecord;
  req: BuildTemplateRequest;
  /** E2B's step name of each Dockerfile instruction (template-steps.ts). */
  stepOf: readonly string[];
  /** The other tags' templates: copies of the built one (template-refs.ts). */
  copies: readonly string[];
  /** After the build, before it is said to be ready: the tags' rows. */
  onReady(): Promise<void>;
}

/** Log lines batched into the build's record, so a chatty RUN costs a write per FLUSH_MS, not per line. */
class BuildLog {
  readonly #run: BuildRun;
  #pending: TemplateBuildLog[] = [];
  #count = 0;
  #writing: Promise<void> = Promise.resolve();
  readonly #timer: NodeJS.Timeout;
  readonly #heartbeat: NodeJS.Timeout;

  constructor(run: BuildRun) {
    this.#run = run;
    this.#timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.#heartbeat = setInterval(() => void this.flush(true), HEARTBEAT_MS);
  }

  add(level: TemplateBuildLog['level'], message: string, step?: string): void {
    if (this.#count >= MAX_LOG_ENTRIES) return;
    const cut = ++this.#count === MAX_LOG_ENTRIES;
    const text = cut ? `(the log is cut at ${MAX_LOG_ENTRIES} lines)` : message.length > MAX_LINE ? `${message.slice(0, MAX_LINE)}…` : message;
    this.#pending.push({ timestamp: new Date().toISOString(), level, message: text, ...(step ? { step } : {}) });
  }

  /** Writes what is pending (and with `beat`, moves updatedAt even when nothing is); writes are serial. */
  flush(beat = false): Promise<void> {
    const batch = this.#pending;
    if (batch.length === 0 && !beat) return this.#writing;
    this.#pending = [];
    this.#writing = this.#writing
      .then(() => this.#run.records.appendTemplateBuildLogs(this.#run.build.id, batch, new Date().toISOString()))
      .catch((err) => this.#run.logger.warn('template build log write failed', { build: this.#run.build.id, error: String(err) }));
    return this.#writing;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    clearInterval(this.#heartbeat);
    await this.flush();
  }
}

/** E2B's step name of a failure: the step a ForkdError names, else the last one that started; before any, `base`; after the last, `finalize`. */
export function failedStep(err: unknown, stepOf: readonly string[], last: BuildStep | undefined): string {
  const named = err instanceof ForkdError ? (err.details as { step?: unknown } | undefined)?.step : undefined;
  if (typeof named === 'string') return named;
  if (typeof named === 'number' && stepOf[named]) return stepOf[named]!;
  if (!last) return 'base';
  if (last.status !== 'start' && last.index === last.total) return 'finalize';
  return stepOf[last.index] ?? 'base';
}

/** What a tenant is told of a failure: a ForkdError's own message (never a tool's stderr), else that it was internal. */
export const publicMessage = (err: unknown): string => (err instanceof ForkdError ? err.message : 'internal error');

/** Runs a started build to ready or error; never throws (its outcome is the record's). */
export async function runTemplateBuild(run: BuildRun): Promise<void> {
  const log = new BuildLog(run);
  let last: BuildStep | undefined;
  const progress: BuildProgress = (line, step) => {
    if (step) last = step;
    log.add('info', line, last ? run.stepOf[last.index] : 'base');
  };
  const { records, build } = run;
  try {
    await run.view.buildTemplate(run.req, progress);
    for (const name of run.copies) await run.view.buildTemplate({ name, from: build.target, copy: true, setup: [] }, progress);
    await run.onReady();
    log.add('info', `template ${build.template} built (tags: ${build.tags.join(', ')})`, 'finalize');
    await log.close();
    await records.setTemplateBuildStatus(build.id, ['building'], 'ready', undefined, new Date().toISOString());
  } catch (err) {
    if (!(err instanceof ForkdError)) run.logger.error('template build failed', { build: build.id, error: String(err) });
    const step = failedStep(err, run.stepOf, last);
    log.add('error', publicMessage(err), step);
    await log.close();
    await records.setTemplateBuildStatus(build.id, ['building'], 'error', { message: publicMessage(err), step }, new Date().toISOString()).catch(() => false);
  }
}
