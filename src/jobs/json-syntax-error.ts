/**
 * Why JSON.parse refused `text` and, when found, where (1-based line and column): from the engine's message, else by
 * jsonErrorOffset, as Node 20 leaves it out of some messages.
 */
export function describeJsonSyntaxError(text: string, err: Error) {
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

/**
 * Offset where `text` stops being JSON (`text.length` if it ends too soon; undefined if valid), found by bisecting over
 * prefixes: one holding the bad character fails inside it.
 */
export function jsonErrorOffset(text: string): number | undefined {
  const failsInside = (end: number): boolean => {
    try {
      JSON.parse(text.slice(0, end));
      return false;
    } catch (err) {
      const message = (err as Error).message;
      const at = /at position (\d+)/.exec(message);
      // Node 20 names an unexpected token without its position; a prefix's end is never one.
      return at ? Number(at[1]) < end : message.startsWith('Unexpected token');
    }
  };
  try {
    JSON.parse(text);
    return undefined;
  } catch {
    if (!failsInside(text.length)) return text.length;
  }
  let [good, bad] = [0, text.length]; // failsInside(good) is false, failsInside(bad) true
  while (bad - good > 1) {
    const mid = (good + bad) >>> 1;
    if (failsInside(mid)) bad = mid;
    else good = mid;
  }
  return good;
}
