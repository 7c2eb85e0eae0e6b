/**
 * Text from the API made safe for a terminal, which acts on control characters: ESC and C1 controls start sequences
 * that move the cursor, hide text or write the clipboard.
 */

/** C0 controls but tab and line feed, DEL, and C1 controls. */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` with each control character a terminal would act on replaced by a space; tab and line feed kept. */
export function terminalSafe(text: string): string {
  return text.replace(CONTROLS, ' ');
}
