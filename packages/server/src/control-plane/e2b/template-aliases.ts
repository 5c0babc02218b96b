import type { NodeService } from '../../node-contract/node-service.js';
import { CODE_INTERPRETER_TEMPLATE, E2B_CODE_INTERPRETER_TEMPLATE } from '../../node/templates/code-interpreter/code-interpreter-recipe.js';
import { forkdTemplateName, parseE2bRef } from './template-refs.js';

/** E2B's stock template ids that forkd builds under its own names (an E2B SDK asks for them by default). */
const ALIASES: Readonly<Record<string, string>> = { [E2B_CODE_INTERPRETER_TEMPLATE]: CODE_INTERPRETER_TEMPLATE };

/**
 * The forkd template an E2B create means: `alias:tag` is that tag's template
 * (template-refs.ts); else a template of that very name if the caller sees
 * one, else its alias's.
 */
export async function e2bTemplateName(view: Pick<NodeService, 'templates'>, templateID: string): Promise<string> {
  if (templateID.includes(':')) return forkdTemplateName(parseE2bRef(templateID));
  const alias = ALIASES[templateID];
  if (alias === undefined) return templateID;
  const names = new Set((await view.templates()).map((t) => t.name));
  return names.has(templateID) || !names.has(alias) ? templateID : alias;
}
