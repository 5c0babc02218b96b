/**
 * A `.dockerignore` as a predicate on context paths (relative, `/`-separated):
 * each line a pattern (`*`, `?`, `**`, `[...]`), `!` re-includes, `#` starts a
 * comment; a pattern matching a directory excludes what is under it; the
 * last pattern that matches a path decides, as Docker's do.
 */
export function dockerignore(text: string): (path: string) => boolean {
  const rules: { re: RegExp; include: boolean }[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const include = line.startsWith('!');
    if (include) line = line.slice(1).trim();
    const clean = line.split('/').filter((s) => s !== '' && s !== '.').join('/');
    if (!clean) continue;
    rules.push({ re: new RegExp(`^${patternRe(clean)}(/.*)?$`, 's'), include });
  }
  return (path) => {
    let excluded = false;
    for (const r of rules) if (r.re.test(path)) excluded = !r.include;
    return excluded;
  };
}

/** Whether a pattern may re-include something under `dir` (then an excluded directory is still walked). */
export function mayReinclude(text: string, dir: string): boolean {
  return text.split(/\r?\n/).some((l) => {
    const t = l.trim();
    return t.startsWith('!') && (t.slice(1).trim().replace(/^\/+/, '').startsWith(`${dir}/`) || t.includes('*'));
  });
}

function patternRe(p: string): string {
  let re = '';
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '*' && p[i + 1] === '*') {
      i++;
      if (p[i + 1] === '/') {
        i++;
        re += '(.*/)?';
      } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '\\' && i + 1 < p.length) re += esc(p[++i]!);
    else if (c === '[') {
      const end = p.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        const body = p.slice(i + 1, end).replace(/^[!^]/, '^').replace(/\\/g, '\\\\');
        re += `[${body}]`;
        i = end;
      }
    } else re += esc(c);
  }
  return re;
}

const esc = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, (m) => `\\${m}`);
