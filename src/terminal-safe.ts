/**
 * Text from the API as a terminal may receive it. A terminal acts on control characters: ESC starts a CSI or
 * OSC sequence (OSC 52 writes the clipboard, CSI moves the cursor or hides text), and so do the C1 controls
 * (U+009B is CSI). Shared by the query table and every stream a command writes to a terminal.
 */

/** C0 controls but tab and line feed, DEL, and C1 controls. */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` with each control character a terminal would act on replaced by a space; tab and line feed kept. */
export function terminalSafe(text: string): string {
  return text.replace(CONTROLS, ' ');
}
