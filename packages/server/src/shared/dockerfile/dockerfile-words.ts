/**
 * Words and variables as Docker's shell lexer reads the arguments of ADD,
 * COPY, ENV, EXPOSE, FROM, LABEL, USER, WORKDIR and ARG: single quotes keep
 * everything, double quotes keep whitespace and expand variables, the escape
 * character keeps the next one; `$NAME`, `${NAME}`, `${NAME:-word}`,
 * `${NAME:+word}` (and `-`, `+`, `?`, `:?`); unquoted expansions split on
 * whitespace. RUN, CMD and ENTRYPOINT are not expanded here (their shell does).
 */

export type Vars = Readonly<Record<string, string>>;

export class SubstitutionError extends Error {}

/** What one expansion may grow to (`ENV A=$A$A` a thousand times would not fit anywhere). */
export const MAX_EXPANDED = 1024 * 1024;

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;
const SPACE = /\s/;

class Lexer {
  #pos = 0;
  #words: string[] = [];
  #word = '';
  #inWord = false;
  #size = 0;

  constructor(
    readonly src: string,
    readonly vars: Vars,
    readonly escape: string,
    readonly split: boolean,
  ) {}

  run(): string[] {
    this.#text(undefined, false);
    this.#end();
    return this.#words;
  }

  #add(ch: string, quoted: boolean): void {
    if ((this.#size += ch.length) > MAX_EXPANDED) throw new SubstitutionError(`an expansion is larger than ${MAX_EXPANDED} bytes`);
    if (this.split && !quoted && SPACE.test(ch)) {
      this.#end();
      return;
    }
    this.#word += ch;
    this.#inWord = true;
  }

  #end(): void {
    if (this.#inWord) this.#words.push(this.#word);
    this.#word = '';
    this.#inWord = false;
  }

  /** Up to `stop` (unquoted) or the end: the word of a `${NAME:-word}` is read the same way. */
  #text(stop: string | undefined, quoted: boolean): void {
    const s = this.src;
    while (this.#pos < s.length) {
      const ch = s[this.#pos]!;
      if (ch === stop) return;
      this.#pos++;
      if (ch === this.escape) {
        if (this.#pos < s.length) this.#add(s[this.#pos++]!, true);
      } else if (ch === "'") this.#single();
      else if (ch === '"') this.#double();
      else if (ch === '$') for (const c of this.#dollar()) this.#add(c, quoted);
      else this.#add(ch, quoted);
    }
    if (stop !== undefined) throw new SubstitutionError(`missing ${stop}`);
  }

  #single(): void {
    const end = this.src.indexOf("'", this.#pos);
    if (end < 0) throw new SubstitutionError('unterminated single quote');
    this.#inWord = true;
    for (const c of this.src.slice(this.#pos, end)) this.#add(c, true);
    this.#pos = end + 1;
  }

  #double(): void {
    const s = this.src;
    this.#inWord = true;
    while (this.#pos < s.length) {
      const ch = s[this.#pos++]!;
      if (ch === '"') return;
      if (ch === this.escape && this.#pos < s.length && ['"', '$', this.escape].includes(s[this.#pos]!)) this.#add(s[this.#pos++]!, true);
      else if (ch === '$') for (const c of this.#dollar()) this.#add(c, true);
      else this.#add(ch, true);
    }
    throw new SubstitutionError('unterminated double quote');
  }

  /** After a `$`: a variable's value, or a lone `$`. */
  #dollar(): string {
    const s = this.src;
    if (s[this.#pos] === '{') {
      this.#pos++;
      const name = this.#name();
      if (!name) throw new SubstitutionError('a ${...} without a variable name');
      const value = this.vars[name];
      const op = /^(:-|:\+|:\?|-|\+|\?)/.exec(s.slice(this.#pos, this.#pos + 2))?.[1];
      if (s[this.#pos] === '}') {
        this.#pos++;
        return value ?? '';
      }
      if (this.#pos >= s.length) throw new SubstitutionError('missing }');
      if (!op) throw new SubstitutionError(`unsupported modifier in \${${name}...}`);
      this.#pos += op.length;
      const word = this.#nested();
      const set = value !== undefined && (op.startsWith(':') ? value !== '' : true);
      if (op.endsWith('-')) return set ? value! : word;
      if (op.endsWith('+')) return set ? word : '';
      if (!set) throw new SubstitutionError(`${name}: ${word || 'is not set'}`);
      return value!;
    }
    const name = this.#name();
    return name ? (this.vars[name] ?? '') : '$';
  }

  #name(): string {
    const s = this.src;
    if (!NAME_START.test(s[this.#pos] ?? '')) return '';
    const start = this.#pos;
    while (this.#pos < s.length && NAME_CHAR.test(s[this.#pos]!)) this.#pos++;
    return s.slice(start, this.#pos);
  }

  /** A modifier's word up to the closing `}`, itself expanded (unsplit). */
  #nested(): string {
    const inner = new Lexer(this.src, this.vars, this.escape, false);
    inner.#pos = this.#pos;
    inner.#size = this.#size;
    inner.#text('}', true);
    this.#pos = inner.#pos + 1;
    this.#size = inner.#size;
    return inner.#word;
  }
}

/** `text` as words: quotes removed, escapes applied, variables expanded, split on unquoted whitespace. */
export function expandWords(text: string, vars: Vars, escape = '\\'): string[] {
  return new Lexer(text, vars, escape, true).run();
}

/** `text` as one word (whitespace kept): a WORKDIR, a USER, an old-form ENV value. */
export function expandWord(text: string, vars: Vars, escape = '\\'): string {
  return new Lexer(text, vars, escape, false).run().join('');
}

/** `key=value` words (ENV, LABEL, ARG): each split at its first `=`. */
export function keyValues(words: readonly string[]): { key: string; value: string | undefined }[] {
  return words.map((w) => {
    const eq = w.indexOf('=');
    return eq < 0 ? { key: w, value: undefined } : { key: w.slice(0, eq), value: w.slice(eq + 1) };
  });
}
