import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planTasks } from '../../src/jobs/plan-tasks.ts';
import { resolveJob } from '../../src/jobs/schema.ts';

/**
 * 100,000 rows (5 MB, over 70 chunks of the file stream; the seen-keys table grows twice): the edges a large input
 * has, at half the CPU of the 200,000 this was.
 */
const ROWS = 100_000;
/** Every 1000th row repeats an earlier company in another spelling. */
const isRepeat = (i: number) => i % 1000 === 999;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'netingest-stream-'));
  const out = createWriteStream(join(dir, 'big.csv'));
  out.write('company_url,row\n');
  let chunk = '';
  for (let i = 0; i < ROWS; i++) {
    chunk += isRepeat(i) ? `www.network.com/company/co-${i - 1}/,${i}\n` : `https://www.network.com/company/co-${i},${i}\n`;
    if (chunk.length > 64 * 1024) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('planTasks on a large input', () => {
  it('streams all 100,000 rows in order with correct lines and collapsed repeats', async () => {
    const job = resolveJob(
      { operation: 'similar-companies', input: { csv: 'big.csv', column: 'company_url' } },
      { displayName: 'big.json', defaultName: 'big', cwd: dir },
    );
    let tasks = 0;
    let duplicates = 0;
    let other = 0;
    let lastLine = 1;
    let ordered = true;
    for await (const item of planTasks(job)) {
      if (item.line !== lastLine + 1) ordered = false;
      lastLine = item.line;
      if (item.kind === 'task') {
        tasks += 1;
        if (item.inputKey !== `https://www.network.com/company/co-${item.line - 2}`) ordered = false;
      } else if (item.kind === 'duplicate') {
        duplicates += 1;
        if (item.inputKey !== `https://www.network.com/company/co-${item.line - 3}`) ordered = false;
      } else other += 1;
    }
    const repeats = ROWS / 1000;
    expect({ tasks, duplicates, other, lastLine, ordered }).toEqual({
      tasks: ROWS - repeats,
      duplicates: repeats,
      other: 0,
      lastLine: ROWS + 1,
      ordered: true,
    });
  });
});
