import { ForkdError } from '@forkd/protocol/errors';
import type { BuildStep, BuildTemplateRequest, NetworkRulesInput, TemplateInfo, TemplateNetworkInfo, PolicyAnswer, PolicyDocument } from '@forkd/protocol';
import type { HttpTransport } from './http-transport.js';
import { readNdjson } from './ndjson.js';
import type { BuildTemplateOptions } from './types.js';
import { wireError } from './wire-error.js';

/** A line of the build stream (`POST /v1/templates`). */
type BuildEvent =
  | { type: 'progress'; line: string; step?: BuildStep }
  | { type: 'done'; template: TemplateInfo }
  | { type: 'error'; error: { code?: unknown; message?: unknown; details?: unknown } };

/** The templates sandboxes are created from, and building new ones. */
export class Templates {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  async list(): Promise<TemplateInfo[]> {
    const r = await this.#http.json<{ templates: TemplateInfo[] }>('GET', '/v1/templates');
    return r.templates;
  }

  /**
   * Builds a template: a sandbox from `from` (default `base`) runs the `setup`
   * commands in order (each by `bash -lc`, as root; one failing fails the
   * build), then its files, and with `start` its running processes, become
   * the template. Building over an existing name replaces it. Builds take
   * minutes; their output arrives line by line on `onProgress`.
   *
   * With `fromImage` (e.g. `python:3.12-slim`) the build starts from an OCI
   * image instead, its Env, WorkingDir and User its sandboxes' defaults and
   * its Entrypoint and Cmd the start command unless `start` is given;
   * `registryAuth` gives a private registry's credentials for this pull only.
   *
   * With `dockerfile` (its text), the build follows it: FROM an image or
   * `template:NAME`, RUN, COPY/ADD from `context` (readBuildContext from
   * `@forkd/sdk/build-context` reads a directory), ENV, WORKDIR, USER, ARG
   * (`buildArgs`), CMD/ENTRYPOINT; each step is cached, and `onProgress`
   * gets each step's `Step i/N` line with the step itself.
   *
   * Aborting stops waiting only: the build carries on on the server.
   */
  async build(req: BuildTemplateRequest, opts: BuildTemplateOptions = {}): Promise<TemplateInfo> {
    const res = await this.#http.request('POST', '/v1/templates', { json: req, streaming: true, signal: opts.abortSignal });
    for await (const raw of readNdjson(res.body!)) {
      const e = raw as BuildEvent | null;
      switch (e?.type) {
        case 'progress':
          if (typeof e.line === 'string') opts.onProgress?.(e.line, e.step);
          break;
        case 'done':
          return e.template;
        case 'error':
          throw wireError(e.error);
        // Unknown lines are ignored so newer servers stay compatible.
      }
    }
    throw new ForkdError('UNAVAILABLE', `the build stream of template ${req.name} ended before the build finished; it may still be running on the server`, {
      name: req.name,
    });
  }

  /** Deleting `base` is FAILED_PRECONDITION; an unknown name NOT_FOUND. */
  /** The template's per-call policy (`{}` when none). */
  async policy(name: string): Promise<PolicyDocument> {
    return (await this.#http.json<PolicyAnswer>('GET', `/v1/templates/${encodeURIComponent(name)}/policy`)).policy;
  }

  /** Replaces the template's per-call policy (its owner, or admin keys; shared templates: admin keys only). */
  async setPolicy(name: string, policy: PolicyDocument): Promise<PolicyDocument> {
    return (await this.#http.json<PolicyAnswer>('PUT', `/v1/templates/${encodeURIComponent(name)}/policy`, { json: policy })).policy;
  }

  delete(name: string): Promise<void> {
    return this.#http.send('DELETE', `/v1/templates/${encodeURIComponent(name)}`);
  }

  /** The template's default network (null: none): what a create from it that names none gets. */
  network(name: string): Promise<TemplateNetworkInfo> {
    return this.#http.json('GET', `/v1/templates/${encodeURIComponent(name)}/network`);
  }

  /** Sets (null: removes) the template's default network (its owner; admin keys for shared templates). */
  setNetwork(name: string, network: NetworkRulesInput | null): Promise<TemplateNetworkInfo> {
    return this.#http.json('PUT', `/v1/templates/${encodeURIComponent(name)}/network`, { json: { network } });
  }
}
