/** The one way a 200 body's text becomes a value, shared by the client, the writer and reprocess. */

/** Parses a body as the client does: a leading byte-order mark is legal in a body but not in JSON.parse's input. */
export function parseJsonBody(text: string): unknown {
  return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) as unknown;
}
