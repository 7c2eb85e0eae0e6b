/**
 * Gathers strings as UTF-8 bytes in a buffer handed out whole (transferred, not copied). Buffers given back are reused,
 * so live buffers are bounded by the chunks in flight rather than by the main thread's rare GC.
 */

/** Largest UTF-8 length of one UTF-16 code unit (a surrogate pair is 4 bytes for 2 units). */
const MAX_BYTES_PER_UNIT = 3;

export class Utf8Accumulator {
  private readonly encoder = new TextEncoder();
  private readonly free: ArrayBuffer[] = [];
  private scratch: Uint8Array;
  private used = 0;

  constructor(initialBytes = 1 << 20) {
    this.scratch = new Uint8Array(initialBytes);
  }

  append(text: string): void {
    const needed = this.used + text.length * MAX_BYTES_PER_UNIT;
    if (needed > this.scratch.length) {
      const grown = new Uint8Array(Math.max(needed, this.scratch.length * 2));
      grown.set(this.scratch.subarray(0, this.used));
      this.scratch = grown;
    }
    this.used += this.encoder.encodeInto(text, this.scratch.subarray(this.used)).written;
  }

  /** The bytes appended since the last take(): the first `length` bytes of `buffer`, which now belongs to the caller. */
  take(): { buffer: ArrayBuffer; length: number } {
    const taken = { buffer: this.scratch.buffer as ArrayBuffer, length: this.used };
    // A new buffer as large as the last one: a chunk that needed to grow it says how large chunks are.
    this.scratch = new Uint8Array(this.free.pop() ?? new ArrayBuffer(this.scratch.length));
    this.used = 0;
    return taken;
  }

  /** A buffer from take() given back for reuse. */
  recycle(buffer: ArrayBuffer): void {
    this.free.push(buffer);
  }
}
