import type { Limits, SandboxState } from '@forkd/protocol';

export interface SandboxRecord {
  id: string;
  template: string;
  state: SandboxState;
  limits: Limits;
  env: Record<string, string>;
  metadata: Record<string, string>;
  createdAt: string;
  error?: string | undefined;
}

export interface TemplateRecord {
  name: string;
  createdAt: string;
  /** Host path of the template's root filesystem volume key. */
  volume: string;
}

/**
 * Durable state of one node. Writes are synchronous and transactional so a
 * crash never leaves a half-written record; the filesystem and runc are
 * reconciled against it on start.
 */
export interface Store {
  insertSandbox(rec: SandboxRecord): void;
  /** Compare-and-set on state: returns false when the current state is not `from`. */
  transition(id: string, from: SandboxRecord['state'], to: SandboxRecord['state'], error?: string): boolean;
  getSandbox(id: string): SandboxRecord | undefined;
  listSandboxes(): SandboxRecord[];
  deleteSandbox(id: string): void;
  upsertTemplate(rec: TemplateRecord): void;
  getTemplate(name: string): TemplateRecord | undefined;
  listTemplates(): TemplateRecord[];
  deleteTemplate(name: string): void;
  close(): void;
}
