/** A JSON syntax error in the user's terms: what is wrong and, when it can be found, where (1-based). */
export interface JsonSyntaxError {
  message: string;
  line?: number;
  column?: number;
}

/**
 * Describes why JSON.parse refused `text`. The position comes from the engine's message when it has one ("in
 * JSON at position N"); Node 20 leaves it out of some messages ("Unexpected token ']', ...") so it is then found
 * by scanning the text. The message loses the engine's position and excerpt, which the caller shows as line:column.
 */
export function describeJsonSyntaxError(text: string, err: Error): JsonSyntaxError {
  const raw = err.message.replace(/\s*\(line \d+ column \d+\)\s*$/, '');
  const message = raw
    // The excerpt can run over lines; a control character as the token is shown escaped (a raw CR would garble the line).
    .replace(/^Unexpected token '(.+?)', .*is not valid JSON$/s, (_all, token: string) => `Unexpected token '${JSON.stringify(token).slice(1, -1)}'`)
    .replace(/\s*in JSON at position \d+.*$/s, '')
    .replace(/\s*after JSON at position \d+.*$/s, ' after the JSON value');
  const pos = /at position (\d+)/.exec(raw);
  let offset = pos ? Number(pos[1]) : jsonErrorOffset(text);
  if (offset === undefined || offset > text.length) return { message };
  // At the end of the input, point just past the last thing written rather than at a trailing blank line.
  if (offset >= text.trimEnd().length) offset = text.trimEnd().length;
  const before = text.slice(0, offset);
  return { message, line: before.split('\n').length, column: offset - before.lastIndexOf('\n') };
}

/** A scan of JSON text stopped at the first character that cannot continue it. */
class Stop {
  constructor(readonly at: number) {}
}

/**
 * Offset of the first character where `text` stops being JSON (RFC 8259), `text.length` when it ends too soon,
 * or undefined when it is valid. Only run on text JSON.parse refused, so speed does not matter.
 */
export function jsonErrorOffset(text: string): number | undefined {
  let i = 0;
  const n = text.length;
  const at = (k: number) => text.charCodeAt(k); // NaN past the end: matches nothing below
  const isDigit = (c: number) => c >= 48 && c <= 57;
  const fail = (): never => {
    throw new Stop(i);
  };
  const expect = (c: number) => {
    if (at(i) !== c) fail();
    i++;
  };
  const skipSpace = () => {
    for (let c = at(i); c === 32 || c === 9 || c === 10 || c === 13; c = at(++i));
  };
  const digits = () => {
    if (!isDigit(at(i))) fail();
    while (isDigit(at(i))) i++;
  };
  const string = () => {
    expect(34);
    for (;;) {
      const c = at(i);
      if (c === 34) return void i++;
      if (!(c >= 32)) fail(); // a control character, or the end of the text
      if (c !== 92) {
        i++;
        continue;
      }
      const e = text[++i];
      if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
      else if (e === 'u') {
        i++;
        for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] ?? '')) fail();
      } else fail();
    }
  };
  const number = () => {
    if (at(i) === 45) i++;
    if (at(i) === 48) i++;
    else digits();
    if (at(i) === 46) {
      i++;
      digits();
    }
    if (at(i) === 101 || at(i) === 69) {
      i++;
      if (at(i) === 43 || at(i) === 45) i++;
      digits();
    }
  };
  // Iterative over an explicit stack, so that deep nesting cannot overflow the call stack.
  const containers: number[] = [];
  /** Reads a value; true when it opened a non-empty object or array, whose first value comes next. */
  const value = (): boolean => {
    skipSpace();
    const c = at(i);
    if (c === 123 || c === 91) {
      i++;
      skipSpace();
      if (at(i) === (c === 123 ? 125 : 93)) {
        i++;
        return false;
      }
      containers.push(c);
      if (c === 123) member();
      return true;
    }
    if (c === 34) string();
    else if (c === 45 || isDigit(c)) number();
    else {
      const word = ['true', 'false', 'null'].find((w) => w.charCodeAt(0) === c);
      if (word === undefined) fail();
      for (const ch of word!) expect(ch.charCodeAt(0));
    }
    return false;
  };
  /** An object member's name and colon. */
  const member = () => {
    skipSpace();
    string();
    skipSpace();
    expect(58);
  };
  try {
    let valueNext = true;
    for (;;) {
      if (valueNext) {
        valueNext = value();
        continue;
      }
      const open = containers.at(-1);
      if (open === undefined) break;
      skipSpace();
      if (at(i) === (open === 123 ? 125 : 93)) {
        i++;
        containers.pop();
        continue;
      }
      expect(44);
      if (open === 123) member();
      valueNext = true;
    }
    skipSpace();
    return i < n ? i : undefined;
  } catch (err) {
    if (err instanceof Stop) return err.at;
    throw err;
  }
}
