/**
 * The one text rule of both engines: a NUL is removed (PostgreSQL's text and jsonb refuse it) and a lone surrogate
 * becomes U+FFFD (jsonb refuses it; drivers would write it differently). Applied where an answer is read through its
 * contract, before either engine writes, and by `copy` to older SQLite datasets; the raw body is kept as received.
 */

/** What a string needs before it can be stored: a NUL or a surrogate (paired ones are checked further). */
// eslint-disable-next-line no-control-regex -- the NUL is what the rule is about
const SUSPECT = /[\u0000\ud800-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** What the rule changed in a string: said as the detail of its drift line. */
export type TextFix = 'NUL removed' | 'lone surrogate replaced by U+FFFD' | 'NUL removed, lone surrogate replaced by U+FFFD';

/** The string as stored, and what was changed (null: nothing). */
export function storableString(text: string): { text: string; fix: TextFix | null } {
  if (!SUSPECT.test(text)) return { text, fix: null };
  const withoutNul = text.replaceAll('\u0000', '');
  const wellFormed = withoutNul.replace(LONE_SURROGATE, '\ufffd');
  return { text: wellFormed, fix: fixOf(withoutNul.length !== text.length, wellFormed !== withoutNul) };
}

function fixOf(nul: boolean, lone: boolean): TextFix | null {
  return nul && lone ? 'NUL removed, lone surrogate replaced by U+FFFD' : nul ? 'NUL removed' : lone ? 'lone surrogate replaced by U+FFFD' : null;
}

/** Told of each string or member name the rule changed: its path (`data.content[].name`), its parent's, and what. */
export type OnTextFix = (path: string, parent: string, fix: TextFix) => void;

/** Deepest nesting read, past it unusable: a hostile body nested thousands deep overflowed the stack (here, in JSON.stringify) and ended the run. */
export const MAX_JSON_DEPTH = 100;

/** Thrown for a value nested past MAX_JSON_DEPTH, at the path where it went past. */
export class TooDeepError extends Error {
  readonly path: string;
  constructor(path: string) {
    super(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    // The path down there is a hundred `[]` or more: its start says where.
    this.path = shortened(path, 60);
  }
}

/** `text`'s first `max` UTF-16 units and an ellipsis when longer, never cut inside a surrogate pair (the rule above). */
export function shortened(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\ud800-\udbff]/.test(text[max - 1]!) ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

/** A parsed JSON value with every string and member name storable; the same value, not a copy, when nothing changed. */
export function storableValue(value: unknown, onFix: OnTextFix = () => undefined, path = '', parent = '', depth = 0): unknown {
  if (typeof value === 'string') {
    const { text, fix } = storableString(value);
    if (fix !== null) onFix(path === '' ? '(root)' : path, parent, fix);
    return text;
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth === MAX_JSON_DEPTH) throw new TooDeepError(path === '' ? '(root)' : path);
  return Array.isArray(value) ? storableArray(value, onFix, path, depth) : storableObject(value as Record<string, unknown>, onFix, path, depth);
}

function storableArray(value: unknown[], onFix: OnTextFix, path: string, depth: number): unknown[] {
  const element = `${path}[]`;
  let out: unknown[] | null = null;
  for (let i = 0; i < value.length; i++) {
    const v = storableValue(value[i], onFix, element, element, depth + 1);
    if (v !== value[i]) (out ??= value.slice())[i] = v;
  }
  return out ?? value;
}

function storableObject(value: Record<string, unknown>, onFix: OnTextFix, path: string, depth: number): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const [name, member] of Object.entries(value)) {
    const key = storableString(name);
    const at = path === '' ? key.text : `${path}.${key.text}`;
    if (key.fix === null) {
      const v = storableValue(member, onFix, at, path, depth + 1);
      if (v !== member) (out ??= { ...value })[name] = v;
      continue;
    }
    out ??= { ...value };
    delete out[name];
    // A fixed name that is another member's ('u\u0000rl' beside 'url'), or an earlier fixed one's, is dropped: it must
    // not take that member's place. Its path is counted once a record, so only if the member kept there is not.
    if (Object.hasOwn(out, key.text)) {
      const kept = value[key.text];
      if (Object.hasOwn(value, key.text) && !(typeof kept === 'string' && storableString(kept).fix !== null)) onFix(at, path, key.fix);
      continue;
    }
    // Its name and its string value fixed alike count once, as one member (not 60 of 30 records).
    let fix: TextFix = key.fix;
    out[key.text] = storableValue(member, (p, parent, f) => (p === at ? (fix = bothFixes(fix, f)) : onFix(p, parent, f)), at, path, depth + 1);
    onFix(at, path, fix);
  }
  return out ?? value;
}

/** The fix of a name and of its value said as one. */
function bothFixes(a: TextFix, b: TextFix): TextFix {
  return fixOf(a.startsWith('NUL') || b.startsWith('NUL'), a.includes('surrogate') || b.includes('surrogate'))!;
}

/** JSON text (a jsonb column's) with the rule applied to what it holds; the same text when nothing needed changing. */
export function storableJsonText(text: string): string {
  // Escapes of a NUL or a surrogate are the only way JSON text holds them (a raw NUL is not JSON).
  if (!/\\u(0000|d[89a-f])/i.test(text) && !SUSPECT.test(text)) return text;
  let fixed = false;
  const value = storableValue(JSON.parse(text) as unknown, () => (fixed = true));
  return fixed ? JSON.stringify(value) : text;
}
