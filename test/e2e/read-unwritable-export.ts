/**
 * Run by read-unwritable-folder.test.ts as another user (uid 65534): one table export in this process, so that
 * the test can choose the parallel path and hold the export after its first batch or chunk while it changes the
 * database. Arguments: <db> <out> serial|parallel [pause]. With `pause`, prints "paused" at the first progress
 * and blocks until a line arrives on stdin. Prints the outcome as one JSON line.
 */
import { readSync } from 'node:fs';
import { exportTable } from '../../src/export/export-table.ts';

const [db, out, path, pause] = process.argv.slice(2);
let paused = false;

function holdOnce(): void {
  if (pause !== 'pause' || paused) return;
  paused = true;
  process.stdout.write('paused\n');
  const buffer = Buffer.alloc(16);
  for (;;) {
    try {
      if (readSync(0, buffer) >= 0) return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
    }
  }
}

try {
  const result = await exportTable({
    db: db!,
    table: 'companies',
    out: out!,
    // Small chunks and no size threshold: a few thousand rows make many chunks on two workers.
    parallel: path === 'parallel' ? { workers: 2, minRowidSpan: 1, chunkRowids: 97, maxChunksInFlight: 3 } : { workers: 1 },
    onProgress: holdOnce,
  });
  process.stdout.write(`${JSON.stringify({ rows: result.rows, workers: result.workers })}\n`);
} catch (err) {
  const { code, message } = err as { code?: string; message: string };
  process.stdout.write(`${JSON.stringify({ code, message })}\n`);
}
