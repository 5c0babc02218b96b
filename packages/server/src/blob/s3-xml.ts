/**
 * The little XML an S3 server answers with, parsed as untrusted bytes: no
 * DTDs (so no entity expansion), the five predefined entities and numeric
 * references only, depth and element count bounded, attributes skipped,
 * namespace prefixes dropped. Every function returns a typed result and
 * never throws (s3-xml.test.ts fuzzes it).
 */

export interface XmlElement {
  name: string;
  children: XmlElement[];
  /** The element's own text (CDATA included), entities decoded. */
  text: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export interface ListPage {
  keys: string[];
  /** Where the next page starts, when the listing is truncated. */
  next?: string | undefined;
}

const MAX_DEPTH = 32;
const MAX_ELEMENTS = 100_000;
const NAME = /^[A-Za-z_][-A-Za-z0-9_.]*(?::[A-Za-z_][-A-Za-z0-9_.]*)?$/;
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

const fail = (error: string): { ok: false; error: string } => ({ ok: false, error });

export function parseXml(src: string): Parsed<XmlElement> {
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let count = 0;
  let i = src.charCodeAt(0) === 0xfeff ? 1 : 0;
  while (i < src.length) {
    const lt = src.indexOf('<', i);
    const textEnd = lt < 0 ? src.length : lt;
    if (textEnd > i) {
      const text = decodeText(src.slice(i, textEnd));
      if (!text.ok) return text;
      const top = stack.at(-1);
      if (top) top.text += text.value;
      else if (text.value.trim() !== '') return fail('text outside the root element');
    }
    if (lt < 0) break;
    if (src.startsWith('<?', lt) || src.startsWith('<!--', lt)) {
      const close = src.indexOf(src[lt + 1] === '?' ? '?>' : '-->', lt + 2);
      if (close < 0) return fail('unterminated declaration or comment');
      i = close + (src[lt + 1] === '?' ? 2 : 3);
    } else if (src.startsWith('<![CDATA[', lt)) {
      const close = src.indexOf(']]>', lt + 9);
      const top = stack.at(-1);
      if (close < 0 || !top) return fail('CDATA outside an element or unterminated');
      top.text += src.slice(lt + 9, close);
      i = close + 3;
    } else if (src[lt + 1] === '!') {
      return fail('DTDs and other declarations are not accepted');
    } else if (src[lt + 1] === '/') {
      const gt = src.indexOf('>', lt);
      if (gt < 0) return fail('unterminated end tag');
      const name = localName(src.slice(lt + 2, gt).trim());
      const top = stack.pop();
      if (!top || top.name !== name) return fail(`end tag </${name.slice(0, 40)}> does not close an open element`);
      i = gt + 1;
    } else {
      const tag = readStartTag(src, lt);
      if (!tag.ok) return tag;
      if (++count > MAX_ELEMENTS) return fail('too many elements');
      const el: XmlElement = { name: tag.value.name, children: [], text: '' };
      const top = stack.at(-1);
      if (top) top.children.push(el);
      else if (root) return fail('more than one root element');
      else root = el;
      if (!tag.value.selfClosing) {
        if (stack.length >= MAX_DEPTH) return fail('nested too deep');
        stack.push(el);
      }
      i = tag.value.end;
    }
  }
  if (stack.length) return fail('unclosed element');
  return root ? { ok: true, value: root } : fail('no root element');
}

function localName(qname: string): string {
  return qname.slice(qname.indexOf(':') + 1);
}

/** `<name attr="v" ...>` at `lt`: the name, whether it closes itself, where it ends. */
function readStartTag(src: string, lt: number): Parsed<{ name: string; selfClosing: boolean; end: number }> {
  let j = lt + 1;
  while (j < src.length && !/[\s/>]/.test(src[j]!)) j++;
  const qname = src.slice(lt + 1, j);
  if (!NAME.test(qname)) return fail(`bad element name ${JSON.stringify(qname.slice(0, 40))}`);
  let quote = '';
  for (; j < src.length; j++) {
    const c = src[j]!;
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '<') return fail('< inside a tag');
    else if (c === '>') {
      const selfClosing = src[j - 1] === '/';
      return { ok: true, value: { name: localName(qname), selfClosing, end: j + 1 } };
    }
  }
  return fail('unterminated start tag');
}

function decodeText(raw: string): Parsed<string> {
  let bad: string | undefined;
  const value = raw.replace(/&([^;&<]{0,12});?/g, (whole, ref: string) => {
    if (!whole.endsWith(';')) bad ??= 'an & that starts no reference';
    const named = ENTITIES[ref];
    if (named) return named;
    const m = /^#(?:x([0-9A-Fa-f]{1,6})|([0-9]{1,7}))$/.exec(ref);
    const cp = m ? parseInt(m[1] ?? m[2]!, m[1] ? 16 : 10) : NaN;
    if (!(cp >= 1 && cp <= 0x10ffff) || (cp >= 0xd800 && cp <= 0xdfff)) {
      bad ??= `unknown reference &${ref.slice(0, 12)};`;
      return '';
    }
    return String.fromCodePoint(cp);
  });
  return bad ? fail(bad) : { ok: true, value };
}

function child(el: XmlElement, name: string): XmlElement | undefined {
  return el.children.find((c) => c.name === name);
}

/** A ListObjectsV2 answer (`ListBucketResult`): the keys of one page and the token of the next. */
export function parseListObjectsV2(src: string): Parsed<ListPage> {
  const doc = parseXml(src);
  if (!doc.ok) return doc;
  const root = doc.value;
  if (root.name !== 'ListBucketResult') return fail(`expected ListBucketResult, got ${root.name.slice(0, 40)}`);
  const keys: string[] = [];
  for (const c of root.children) {
    if (c.name !== 'Contents') continue;
    const key = child(c, 'Key');
    if (!key) return fail('Contents without a Key');
    keys.push(key.text);
  }
  const truncated = child(root, 'IsTruncated')?.text.trim() ?? 'false';
  if (truncated !== 'true' && truncated !== 'false') return fail('IsTruncated is neither true nor false');
  if (truncated === 'false') return { ok: true, value: { keys } };
  const next = child(root, 'NextContinuationToken')?.text;
  if (!next) return fail('a truncated listing without NextContinuationToken');
  return { ok: true, value: { keys, next } };
}

/** An S3 error document's `Code` (letters only), when the body is one. */
export function parseS3ErrorCode(src: string): string | undefined {
  const doc = parseXml(src);
  if (!doc.ok || doc.value.name !== 'Error') return undefined;
  const code = child(doc.value, 'Code')?.text.trim() ?? '';
  return /^[A-Za-z0-9.]{1,64}$/.test(code) ? code : undefined;
}
