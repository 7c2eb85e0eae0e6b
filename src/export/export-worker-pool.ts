/** A parallel export's workers, a promise per chunk, each read to the least busy; one that fails rejects all it owes and every later read. */
import type { Worker } from 'node:worker_threads';
import { NetingestError } from '../errors.ts';
import { startWorker } from '../threads/start.ts';
import type { OutputPiece } from './write-output.ts';
import type { ExportWorkerData, ExportWorkerMessage, ToExportWorkerMessage } from './export-worker-protocol.ts';

const THREAD = new URL('./export-worker.ts', import.meta.url);

/** A worker's failure as the main thread sees it: the worker's message, and SQLite's code when it has one. */
export class ExportWorkerError extends NetingestError {
  constructor(message: string, code: string | undefined) {
    super(code ?? 'EXPORT_WORKER_FAILED', message);
  }
}

/** A worker's own crash in the user's words; SQLite errors come as 'failed' messages instead. */
function explainWorkerError(err: Error): Error {
  if ((err as NodeJS.ErrnoException).code !== 'ERR_WORKER_OUT_OF_MEMORY') return err;
  return new ExportWorkerError(
    'an export worker ran out of memory (a value too large for its heap: tens of MB of text); ' +
      'export this table with --sql "SELECT * FROM <table>", which reads it on the main thread',
    'EXPORT_WORKER_OUT_OF_MEMORY',
  );
}

class PoolMember {
  readonly pending = new Map<number, { resolve: (chunk: OutputPiece) => void; reject: (err: Error) => void }>();
  failure: Error | null = null;
  private readyWaiter!: { resolve: () => void; reject: (err: Error) => void };
  readonly ready: Promise<void>;

  constructor(readonly worker: Worker) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.readyWaiter = { resolve, reject };
    });
    // Observed so that a failure during start-up is never an unhandled rejection; start() reports it.
    this.ready.catch(() => undefined);
    worker.on('message', (message: ExportWorkerMessage) => this.onMessage(message));
    worker.on('error', (err) => this.fail(explainWorkerError(err)));
    worker.on('exit', (code) => this.fail(new ExportWorkerError(`export worker stopped unexpectedly (exit code ${code})`, undefined)));
  }

  private onMessage(message: ExportWorkerMessage): void {
    if (message.type === 'ready') {
      this.readyWaiter.resolve();
    } else if (message.type === 'chunk') {
      const waiter = this.pending.get(message.seq);
      this.pending.delete(message.seq);
      const { buffer } = message;
      waiter?.resolve({ rows: message.rows, data: new Uint8Array(buffer, 0, message.length), release: () => this.recycle(buffer) });
    } else {
      this.fail(new ExportWorkerError(message.message, message.code));
    }
  }

  private recycle(buffer: ArrayBuffer): void {
    if (this.failure) return;
    this.worker.postMessage({ type: 'recycle', buffer } satisfies ToExportWorkerMessage, [buffer]);
  }

  /** Keeps the first failure; rejects everything owed. */
  fail(err: Error): void {
    this.failure ??= err;
    this.readyWaiter.reject(this.failure);
    for (const waiter of this.pending.values()) waiter.reject(this.failure);
    this.pending.clear();
  }
}

export class ExportWorkerPool {
  private constructor(private readonly members: PoolMember[]) {}

  /** Starts `count` workers and resolves once each has opened its read transaction (its snapshot). */
  static async start(count: number, data: ExportWorkerData, resourceLimits: Worker['resourceLimits'] = {}): Promise<ExportWorkerPool> {
    const members = Array.from({ length: count }, () => new PoolMember(startWorker(THREAD, data, { resourceLimits })));
    const pool = new ExportWorkerPool(members);
    try {
      await Promise.all(members.map((m) => m.ready));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  /** Reads, encodes and returns the rows whose rowid is in [fromRowid, toRowid]. */
  read(seq: number, fromRowid: number, toRowid: number): Promise<OutputPiece> {
    let member = this.members[0]!;
    for (const m of this.members) if (m.pending.size < member.pending.size) member = m;
    // Closing failed every member, so a read after close() is refused here too.
    if (member.failure) return Promise.reject(member.failure);
    return new Promise<OutputPiece>((resolve, reject) => {
      member.pending.set(seq, { resolve, reject });
      member.worker.postMessage({ type: 'read', seq, fromRowid, toRowid } satisfies ToExportWorkerMessage);
    });
  }

  /** Stops every worker (their connections close with them); chunks still owed are rejected. Safe to repeat. */
  async close(): Promise<void> {
    for (const m of this.members) m.fail(new ExportWorkerError('the export workers were stopped', undefined));
    await Promise.all(this.members.map((m) => m.worker.terminate()));
  }
}
