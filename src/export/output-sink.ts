/**
 * Where an export writes. A file goes to a temporary sibling renamed into place on success, so a reader of `--out`
 * sees the old file or the whole new one; failure removes the temporary. A stream is written as it goes.
 */
import { open as openFile, rename, unlink, type FileHandle } from 'node:fs/promises';
import { accessSync, constants as fsConstants, realpathSync, statSync, unlinkSync, createWriteStream, WriteStream, type Stats } from 'node:fs';
import { once } from 'node:events';
import { Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { basename, dirname, join, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import { NetingestError, UsageError } from '../errors.ts';
import { ExportInterruptedError } from '../store/readers/query-errors.ts';
import { describeFsError } from '../input/input-error.ts';
import { terminalSafe } from '../text-width.ts';

/** Bytes buffered in memory before a write waits for the destination: large enough to overlap disk and SQLite. */
export const SINK_HIGH_WATER_MARK_BYTES = 1 << 18;

/** Bytes between background fdatasync() calls: flushing as it goes overlaps the disk wait with reading and encoding. */
export const SINK_SYNC_EVERY_BYTES = 32 << 20;

/** Stops an export whose signal has aborted (SIGINT/SIGTERM/SIGHUP): the caller then discards the output. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ExportInterruptedError();
}

/** The output file cannot be created (no such folder, permission denied): the user must fix it (exit 2). */
export class OutputError extends UsageError {
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(`${file}: ${message}`, 'OUTPUT_UNWRITABLE', options);
  }
}

/** Writing or finishing the output failed midway (disk full, I/O error); the partial file was removed (exit 1). */
export class OutputWriteError extends NetingestError {
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super('OUTPUT_WRITE_FAILED', `${file}: ${message}`, options);
  }
}

export interface OutputSink {
  /**
   * Writes text or UTF-8 bytes; a promise only when the destination asks to wait. `onWritten` runs once the bytes may
   * be reused; a sink that cannot know when (a JS stream may pass the buffer on) never calls it.
   */
  write(chunk: string | Uint8Array, onWritten?: () => void): Promise<void> | undefined;
  /** Flushes, and for a file fsyncs and renames it into place unless `signal` aborted (ExportInterruptedError). */
  commit(signal?: AbortSignal): Promise<void>;
  /** Discards the output (removes the temporary file). Safe to call more than once and after commit. */
  abort(): Promise<void>;
}

/** The reader of a stream went away (EPIPE, e.g. `| head`): not an error, the export just stops. */
export class OutputClosedError extends Error {
  constructor() {
    super('the reader of the output closed it');
  }
}

/**
 * Writes to `stream` (stdout) with backpressure; never closes it. A terminal gets control characters replaced: the
 * API's values may hold escape sequences it would run. A file or pipe gets the bytes as they are.
 */
export function streamSink(stream: NodeJS.WritableStream): OutputSink {
  const sink = rawStreamSink(stream);
  return (stream as { isTTY?: boolean }).isTTY === true ? terminalSink(sink) : sink;
}

function terminalSink(sink: OutputSink): OutputSink {
  // Byte chunks (from the export worker threads) may end inside a UTF-8 sequence: the decoder keeps the rest.
  const decoder = new StringDecoder('utf8');
  return {
    write: (chunk, onWritten) => sink.write(terminalSafe(typeof chunk === 'string' ? chunk : decoder.write(chunk)), onWritten),
    async commit(signal) {
      const rest = decoder.end();
      if (rest !== '') await sink.write(terminalSafe(rest));
      await sink.commit(signal);
    },
    abort: () => sink.abort(),
  };
}

function rawStreamSink(stream: NodeJS.WritableStream): OutputSink {
  let failure: Error | undefined;
  const onError = (err: Error) => {
    failure = (err as NodeJS.ErrnoException).code === 'EPIPE' ? new OutputClosedError() : err;
  };
  stream.on('error', onError);
  const detach = () => stream.off('error', onError);
  // The write callback of a socket, pipe, terminal or file stream (stdout is one of these) runs once the bytes
  // are handed to the OS; another stream (a PassThrough) may still hold the very buffer for its reader.
  const writesToOs = stream === process.stdout || stream instanceof Socket || stream instanceof WriteStream;
  return {
    write: (chunk, onWritten) => writeWithBackpressure(stream, chunk, writesToOs ? onWritten : undefined, () => failure),
    async commit() {
      detach();
      if (failure) throw failure;
    },
    abort: async () => void detach(),
  };
}

/** Refuses up front a path naming a folder: the final rename would fail only after the whole export. */
export function assertOutputIsAFile(outPath: string): void {
  if (outPath.endsWith('/') || outPath.endsWith(sep)) {
    throw new OutputError(outPath, 'cannot write the output file: the path ends with a slash, so it names a folder; name a file');
  }
  const existing = statIfExists(outPath);
  if (existing?.isDirectory()) {
    throw new OutputError(outPath, 'cannot write the output file: it is a folder; name a file inside it or elsewhere');
  }
  // The rename would replace the device or pipe itself (as root, /dev/null) with a regular file.
  if (existing !== undefined && !existing.isFile()) {
    throw new OutputError(
      outPath,
      'cannot write the output file: it is a device, pipe or socket, not a file, and the finished file is renamed onto it; leave out --out to write to stdout',
    );
  }
}

/**
 * Refuses up front an output whose folder is missing or not writable, as the open would: a `run` writes its
 * `--invalid-out` only after its paid calls, and would otherwise end exit 2 with the credits spent.
 */
export function assertOutputFolderWritable(outPath: string): void {
  assertOutputIsAFile(outPath);
  try {
    accessSync(dirname(outPath), fsConstants.W_OK);
  } catch (err) {
    throw cannotWrite(outPath, err);
  }
}

/** The open's or the folder check's error in the user's words: a missing folder is named. */
function cannotWrite(outPath: string, err: unknown): OutputError {
  const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? `folder ${dirname(outPath)} does not exist` : describeFsError(err);
  return new OutputError(outPath, `cannot write the output file: ${why}`, { cause: err });
}

/** What `path` is (through symbolic links); undefined when missing or unreadable, which is left to the open. */
export function statIfExists(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** `path` with every symbolic link resolved, or `path` itself when it does not exist (yet). */
export function realPathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Opens a temporary file next to `outPath`; fails early with a clear message if the folder cannot be written. */
export async function openFileSink(outPath: string): Promise<OutputSink> {
  assertOutputIsAFile(outPath);
  // An existing --out is replaced at a symlink's real path (the link stays), keeping its mode (0600).
  const targetPath = realPathOr(outPath);
  const mode = statIfExists(targetPath)?.mode;
  const tempPath = join(dirname(targetPath), `.${basename(targetPath)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  let file: FileHandle;
  try {
    file = await openFile(tempPath, 'wx');
  } catch (err) {
    throw cannotWrite(outPath, err);
  }
  // Last resort if something calls process.exit() mid-export: no temporary file is left behind.
  const removeOnExit = () => {
    try {
      unlinkSync(tempPath);
    } catch {
      // already gone
    }
  };
  process.on('exit', removeOnExit);
  const stream: WriteStream = createWriteStream('', {
    // The handle's number, not the handle: the handle's own sync() never settles while a stream holds it.
    fd: file.fd,
    autoClose: false,
    highWaterMark: SINK_HIGH_WATER_MARK_BYTES,
  });
  let failure: Error | undefined;
  const writeFailed = (err: unknown, what = 'write failed') =>
    new OutputWriteError(outPath, `${what}: ${describeFsError(err)}; nothing was written`, { cause: err });
  stream.on('error', (err) => {
    failure = writeFailed(err);
  });
  let unsyncedBytes = 0;
  let syncing: Promise<void> | null = null;
  const syncInBackground = (bytes: number) => {
    unsyncedBytes += bytes;
    if (unsyncedBytes < SINK_SYNC_EVERY_BYTES || syncing !== null) return;
    unsyncedBytes = 0;
    syncing = file
      .datasync()
      .catch((err: unknown) => void (failure ??= writeFailed(err)))
      .finally(() => (syncing = null));
  };
  let settled = false;
  const abort = async () => {
    if (settled) return;
    settled = true;
    stream.destroy();
    // Never close the descriptor under a sync still running on it.
    await syncing;
    // A second close() (after commit's) resolves at once.
    await file.close().catch(() => undefined);
    await unlink(tempPath).catch(() => undefined);
    process.off('exit', removeOnExit);
  };
  if (mode !== undefined) {
    try {
      // Unlike open(), fchmod() is not masked by the umask: the replaced file's mode is kept exactly.
      await file.chmod(mode & 0o7777);
    } catch (err) {
      await abort();
      throw new OutputError(outPath, `cannot keep the permissions of the file it replaces: ${describeFsError(err)}`, { cause: err });
    }
  }

  return {
    // The file stream's callback runs once fs.write() has returned: the bytes are in the file.
    write: (chunk, onWritten) => {
      const wait = writeWithBackpressure(stream, chunk, onWritten, () => failure);
      syncInBackground(chunk.length);
      return wait;
    },
    async commit(signal) {
      if (settled) return;
      try {
        await new Promise<void>((resolve, reject) => {
          stream.end((err?: Error | null) => (err ? reject(err) : resolve()));
        });
        await syncing;
        if (failure) throw failure;
        await file.sync();
        await file.close();
        // The last moment an interrupt can keep --out as it was; the awaits above let a signal that came while
        // SQLite held the thread be handled.
        throwIfAborted(signal);
        await rename(tempPath, targetPath);
        settled = true;
        process.off('exit', removeOnExit);
      } catch (err) {
        await abort();
        if (err instanceof OutputWriteError || err instanceof ExportInterruptedError) throw err;
        throw writeFailed(err, 'cannot finish the output file');
      }
    },
    abort,
  };
}

/** Writes a chunk unless the sink already failed; a promise only when the stream asks the writer to wait. */
function writeWithBackpressure(
  stream: NodeJS.WritableStream,
  chunk: string | Uint8Array,
  onWritten: (() => void) | undefined,
  failed: () => Error | undefined,
): Promise<void> | undefined {
  const failure = failed();
  if (failure) throw failure;
  if (stream.write(chunk, onWritten && (() => onWritten()))) return undefined;
  return waitForDrain(stream, failed);
}

/** Resolves on 'drain'; rejects if the stream fails or closes first, with the failure the sink's listener recorded. */
async function waitForDrain(stream: NodeJS.WritableStream, failed: () => Error | undefined): Promise<void> {
  const settled = new AbortController();
  const closed = once(stream, 'close', { signal: settled.signal }).then(() => Promise.reject(new OutputClosedError()));
  try {
    await Promise.race([once(stream, 'drain', { signal: settled.signal }), closed]);
  } catch (err) {
    throw failed() ?? err;
  } finally {
    settled.abort();
  }
}
