/** Text on a terminal: its width and cutting to it (the query table, the progress line); API text made safe for it. */
/** Made on first use: ICU's first segmenter takes ~20 ms of a start, and ASCII text (the usual) never needs it. */
let graphemes: Intl.Segmenter | undefined;
const segmenter = () => (graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' }));
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const WIDE = /\p{Extended_Pictographic}|[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]|[\u{20000}-\u{3fffd}]/u;
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]+$/u;

/** Terminal cells taken by `text`: wide (CJK, emoji) graphemes count 2, combining marks 0. */
export function displayWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  let width = 0;
  for (const { segment } of segmenter().segment(text)) width += graphemeWidth(segment);
  return width;
}

function graphemeWidth(grapheme: string): number {
  if (ZERO_WIDTH.test(grapheme)) return 0;
  return WIDE.test(grapheme) ? 2 : 1;
}

/** `text` cut to `width` cells, ending with `…` when cut. */
export function fit(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  let out = '';
  let used = 0;
  for (const { segment } of segmenter().segment(text)) {
    const w = graphemeWidth(segment);
    if (used + w > width - 1) break;
    out += segment;
    used += w;
  }
  return out + '…';
}

/** C0 controls but tab and line feed, DEL, and C1 controls. */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` with each CONTROLS character a space: ESC and C1 controls start sequences that move the cursor, hide text or write the clipboard. */
export function terminalSafe(text: string): string {
  return text.replace(CONTROLS, ' ');
}

/** One value on one terminal or log line (query's table cells): line breaks `↵`, tabs a space, other controls as terminalSafe. */
export function terminalValue(text: string): string {
  return terminalSafe(text.replace(/\r\n|\r|\n/g, '↵').replace(/\t/g, ' '));
}

/** JSON text with DEL and C1 controls as `\u` escapes: JSON.stringify leaves them raw, and a terminal may run a C1 CSI. */
export function terminalSafeJson(json: string): string {
  // They can only be inside JSON strings, where the escape reads back as the same character.
  return json.replace(/[\x7f-\x9f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
