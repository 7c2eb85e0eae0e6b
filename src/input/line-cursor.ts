/**
 * Tracks physical line numbers across consecutive CSV records' raw text: csv-parse's `info.lines` miscounts CRLF in
 * quoted fields. A CRLF split across two records counts once.
 */
export class LineCursor {
  /** Line on which the next unconsumed character sits. */
  private next: number;
  private afterCR = false;
  /** Line of the last character of the record consumed last (its own final line break not counted). */
  lastLine: number;

  constructor(firstLine = 1) {
    this.next = firstLine;
    this.lastLine = firstLine;
  }

  /** Consumes one record's raw text and returns the line of its first character (blank lines before it skipped). */
  advance(raw: string): number {
    const n = raw.length;
    let i = 0;
    // Blank lines csv-parse skipped come first in the raw text.
    for (; i < n; i++) {
      const c = raw.charCodeAt(i);
      if (c === 10) {
        if (!this.afterCR) this.next++;
        this.afterCR = false;
      } else if (c === 13) {
        this.next++;
        this.afterCR = true;
      } else break;
    }
    if (i === n) {
      this.lastLine = this.next;
      return this.next;
    }
    const start = this.next;
    // The rest holds the record's own line breaks (usually just the final one): counted with native scans.
    let breaks = 0;
    for (let k = raw.indexOf('\r', i); k !== -1; k = raw.indexOf('\r', k + 1)) breaks++;
    for (let k = raw.indexOf('\n', i); k !== -1; k = raw.indexOf('\n', k + 1)) {
      if (raw.charCodeAt(k - 1) !== 13) breaks++;
    }
    this.next += breaks;
    const last = raw.charCodeAt(n - 1);
    this.afterCR = last === 13;
    // The record's terminating break, when it has one, ends its last line rather than starting another.
    this.lastLine = last === 10 || last === 13 ? this.next - 1 : this.next;
    return start;
  }
}
