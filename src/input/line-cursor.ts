/**
 * Tracks physical line numbers across the raw text of consecutive CSV records. csv-parse's own `info.lines`
 * miscounts CRLF inside quoted fields, so we count line breaks (CRLF, LF or a lone CR, each one break) in the
 * raw text ourselves; a CRLF split across two records' raw text still counts once.
 */
export class LineCursor {
  /** Line on which the next unconsumed character sits. */
  private next: number;
  private afterCR = false;

  constructor(firstLine = 1) {
    this.next = firstLine;
  }

  /** Consumes one record's raw text and returns the line of its first character (blank lines before it skipped). */
  advance(raw: string): number {
    let start = -1;
    for (let i = 0; i < raw.length; i++) {
      const c = raw.charCodeAt(i);
      if (c === 10) {
        if (!this.afterCR) this.next++;
        this.afterCR = false;
      } else if (c === 13) {
        this.next++;
        this.afterCR = true;
      } else {
        this.afterCR = false;
        if (start < 0) start = this.next;
      }
    }
    return start < 0 ? this.next : start;
  }
}
