import { ForkdError, TEMPLATE_NAME_PATTERN } from '@forkd/protocol';

/** E2B's tag for a build named without one: what `Sandbox.create('alias')` gets. */
export const DEFAULT_TAG = 'default';
/** A tag becomes part of a forkd template name: lowercase letters, digits and single hyphens. */
const TAG = /^[a-z0-9]+(-[a-z0-9]+)*$/;

export interface E2bTemplateRef {
  alias: string;
  tag: string;
}

const invalid = (msg: string) => new ForkdError('INVALID_ARGUMENT', msg);

/** A tag as E2B's assignTags names it; INVALID_ARGUMENT for what forkd cannot keep. */
export function checkTag(tag: string): string {
  if (!TAG.test(tag) || tag.length > 40) throw invalid(`invalid tag ${JSON.stringify(tag.slice(0, 80))}: lowercase letters, digits and single hyphens, at most 40`);
  return tag;
}

/**
 * `alias` or `alias:tag`, as E2B's SDK names templates. `--` in an alias is
 * refused: it is what joins a tag to its alias in the forkd name.
 */
export function parseE2bRef(name: string): E2bTemplateRef {
  const at = name.indexOf(':');
  const alias = at < 0 ? name : name.slice(0, at);
  const tag = at < 0 ? DEFAULT_TAG : name.slice(at + 1);
  if (!TEMPLATE_NAME_PATTERN.test(alias) || alias.includes('--')) throw invalid(`invalid template name ${JSON.stringify(alias.slice(0, 80))}: a lowercase letter, then lowercase letters, digits and single hyphens`);
  checkTag(tag);
  forkdTemplateName({ alias, tag });
  return { alias, tag };
}

/**
 * The forkd template a tag names: the alias itself for the default tag,
 * `alias--tag` for any other (each its own template, so a tag keeps its
 * build when the alias is built again).
 */
export function forkdTemplateName(ref: E2bTemplateRef): string {
  if (ref.tag === DEFAULT_TAG) return ref.alias;
  const name = `${ref.alias}--${ref.tag}`;
  if (!TEMPLATE_NAME_PATTERN.test(name)) throw invalid(`template ${ref.alias}:${ref.tag} is too long (alias, tag and two hyphens in 63 characters)`);
  return name;
}

/** The E2B reference a forkd template name stands for (an alias with `--` is a tag's). */
export function e2bRefOf(forkdName: string): E2bTemplateRef {
  const at = forkdName.indexOf('--');
  return at < 0 ? { alias: forkdName, tag: DEFAULT_TAG } : { alias: forkdName.slice(0, at), tag: forkdName.slice(at + 2) };
}
