/** Starts and stops the WAL checkpointer thread (wal-checkpointer-thread.ts) of a dataset being written. */
import { startWorker } from '../threads/start.ts';

/** Settings of the checkpointer; every default is here. */
export interface WalCheckpointerOptions {
  /** Time between two PASSIVE checkpoints. Default 200 ms. */
  intervalMs?: number;
}

export const WAL_CHECKPOINTER_DEFAULTS = { intervalMs: 200 } as const;

/** A running checkpointer. */
export interface WalCheckpointer {
  /** Stops the timer, closes the thread's connection and waits for the thread to end. */
  close(): Promise<void>;
}

const THREAD = new URL('./wal-checkpointer-thread.ts', import.meta.url);

/** Starts checkpointing `dbFile` from a thread of its own. */
export function startWalCheckpointer(dbFile: string, options: WalCheckpointerOptions = {}): WalCheckpointer {
  const intervalMs = options.intervalMs ?? WAL_CHECKPOINTER_DEFAULTS.intervalMs;
  const worker = startWorker(THREAD, { dbFile, intervalMs });
  // A checkpointer that cannot start or fails costs only speed: the writer checkpoints on its own.
  worker.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // Never what keeps a process alive, except while close() waits for it (an unref'd thread being awaited
  // would let the event loop empty under the waiter).
  worker.unref();
  return {
    async close() {
      worker.ref();
      worker.postMessage({ type: 'close' });
      await exited;
    },
  };
}
