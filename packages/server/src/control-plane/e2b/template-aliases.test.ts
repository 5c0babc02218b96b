import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TemplateInfo } from '@forkd/protocol';
import { e2bTemplateName } from './template-aliases.js';

const seeing = (...names: string[]) => ({ templates: async () => names.map((name) => ({ name }) as TemplateInfo) });

test("E2B's code-interpreter-v1 is forkd's code-interpreter, unless a template of that very name is there", async () => {
  assert.equal(await e2bTemplateName(seeing('base', 'code-interpreter'), 'code-interpreter-v1'), 'code-interpreter');
  assert.equal(await e2bTemplateName(seeing('code-interpreter', 'code-interpreter-v1'), 'code-interpreter-v1'), 'code-interpreter-v1');
  assert.equal(await e2bTemplateName(seeing('base'), 'code-interpreter-v1'), 'code-interpreter-v1', 'neither: the create answers not found under the name asked');
  assert.equal(await e2bTemplateName(seeing('base'), 'base'), 'base');
});
