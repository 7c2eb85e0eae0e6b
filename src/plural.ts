/** `1 row`, `2 rows`: a count with its noun, for messages people read. */
export function plural(count: number, noun: string): string {
  return `${count} ${count === 1 ? noun : `${noun}s`}`;
}
