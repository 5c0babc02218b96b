/**
 * E2B's template builder (control-plane/e2b/template-builds.ts) in the
 * control store, so a build requested through one replica is started,
 * polled and tagged through any: the build's state and log, the files its
 * COPY steps uploaded (by tenant and content hash), and tags naming builds.
 */

export type TemplateBuildStatus = 'waiting' | 'building' | 'ready' | 'error';

export interface TemplateBuildRecord {
  id: string;
  tenant: string;
  /** E2B's templateID: the template's alias (its forkd name for the default tag). */
  template: string;
  /** The forkd template the build makes (see template-names.ts). */
  target: string;
  /** Tags the build gets when it is ready; the first is the one `target` names. */
  tags: string[];
  status: TemplateBuildStatus;
  reason?: { message: string; step?: string | undefined } | undefined;
  createdAt: string;
  /** Last sign of life while building (logs, a heartbeat): a build silent too long was cut by a restart. */
  updatedAt: string;
}

export interface TemplateBuildLog {
  timestamp: string;
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  step?: string | undefined;
}

export interface TemplateTagRecord {
  template: string;
  tag: string;
  tenant: string;
  buildId: string;
  createdAt: string;
}

export interface TemplateBuildRecords {
  putTemplateBuild(b: TemplateBuildRecord): Promise<void>;
  templateBuild(id: string): Promise<TemplateBuildRecord | undefined>;
  /** Moves a build from one of `from` to `status` (with its reason) in one statement; false when it was in none of them. */
  setTemplateBuildStatus(id: string, from: readonly TemplateBuildStatus[], status: TemplateBuildStatus, reason: TemplateBuildRecord['reason'], at: string): Promise<boolean>;
  /** Appends to a build's log (nothing: only its updatedAt moves). */
  appendTemplateBuildLogs(id: string, entries: readonly TemplateBuildLog[], at: string): Promise<void>;
  /** Up to `limit` log entries from `offset` (0-based), in order. */
  templateBuildLogs(id: string, offset: number, limit: number): Promise<TemplateBuildLog[]>;
  putTemplateFile(tenant: string, hash: string, data: Buffer, at: string): Promise<void>;
  templateFile(tenant: string, hash: string): Promise<Buffer | undefined>;
  hasTemplateFile(tenant: string, hash: string): Promise<boolean>;
  /** Points a tag at a build (replacing where it pointed). */
  setTemplateTag(t: TemplateTagRecord): Promise<void>;
  /** Removes tags of a template; returns how many there were. */
  dropTemplateTags(template: string, tags: readonly string[]): Promise<number>;
  /** A template's tags, oldest first. */
  templateTags(template: string): Promise<TemplateTagRecord[]>;
  /** How many of a tenant's builds are waiting (requested since `since.waiting`) or building (alive since `since.building`): a tenant may not pile them up. */
  activeTemplateBuilds(tenant: string, since: { waiting: string; building: string }): Promise<number>;
  /** The bytes of a tenant's uploads kept (a tenant may not fill the store). */
  templateFileBytes(tenant: string): Promise<number>;
  /** Forgets builds (and their logs) and uploaded files older than `before`. */
  pruneTemplateBuilds(before: string): Promise<void>;
}
