/**
 * A statement's child process and a worker thread started from the sources (child-bootstrap.cjs and
 * worker-bootstrap.cjs with the TypeScript module, through tsx), as `npm run netingest` starts them when dist/ is
 * older than the sources. The suite's other children and workers load the fresh bundle of the same code instead
 * (threads/start.ts), so these paths are run here.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import type { FromStatementChild, ToStatementChild } from '../../src/store/sqlite/statement-rows.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-child-src-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('reads the rows of a statement, in batches, through tsx', async () => {
  const db = join(dir, 'data.db');
  openDatabase(db).close();
  const child = fork(
    fileURLToPath(new URL('../../src/threads/child-bootstrap.cjs', import.meta.url)),
    [fileURLToPath(new URL('../../src/store/sqlite/statement-child.ts', import.meta.url)), String(process.pid)],
    { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    const batches: FromStatementChild[] = [];
    const ask = (message: ToStatementChild) =>
      new Promise<void>((resolve) => {
        if (message.type === 'more') child.once('message', (m: FromStatementChild) => (batches.push(m), resolve()));
        child.send(message, () => message.type === 'start' && resolve());
      });
    await ask({ type: 'start', db, sql: 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) SELECT i, \'x\' || i AS s FROM n', batchRows: 2 });
    await ask({ type: 'more' });
    await ask({ type: 'more' });
    expect(batches).toEqual([
      { type: 'rows', rows: [[1n, 'x1'], [2n, 'x2']], done: false },
      { type: 'rows', rows: [[3n, 'x3']], done: true },
    ]);
  } finally {
    child.kill();
    await exited;
  }
});

it('starts a worker thread (the WAL checkpointer) through tsx, which ends when asked', async () => {
  const db = join(dir, 'wal.db');
  openDatabase(db).close();
  const worker = new Worker(new URL('../../src/threads/worker-bootstrap.cjs', import.meta.url), {
    workerData: { module: fileURLToPath(new URL('../../src/store/wal-checkpointer-thread.ts', import.meta.url)), data: { dbFile: db, intervalMs: 20 } },
    execArgv: [],
  });
  const errors: Error[] = [];
  worker.on('error', (err) => errors.push(err));
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  // Loaded and running: its module set the message handler the close goes to.
  await new Promise((resolve) => worker.once('online', resolve));
  worker.postMessage({ type: 'close' });
  expect(await exited).toBe(0);
  expect(errors).toEqual([]);
});
