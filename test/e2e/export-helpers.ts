/**
 * Helpers shared by the export tests: a stream that keeps what is written, output folders to inspect, and an
 * enrich read back as objects.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { enrichJob, type EnrichOptions } from '../../src/export/enrich.ts';

/** A stdout-like stream that keeps everything written to it. */
export function capture(): PassThrough & { text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => chunks.push(c));
  return Object.assign(stream, { text: () => Buffer.concat(chunks).toString('utf8') });
}

/** Temporary files an export left in `folder` (none, whatever happened). */
export function leftovers(folder: string): string[] {
  return readdirSync(folder).filter((f) => f.endsWith('.tmp'));
}

/** An empty folder `name` under `dir`. */
export function freshFolder(dir: string, name: string): string {
  const folder = join(dir, name);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder);
  return folder;
}

/** What `enrich --rows per-result` writes for a job (every result), as JSON Lines parsed into one object per output row. */
export async function enrichedRows(options: Omit<EnrichOptions, 'stream' | 'out' | 'format'>): Promise<Record<string, unknown>[]> {
  const stream = capture();
  await enrichJob({ rows: 'per-result', ...options, stream, format: 'jsonl' });
  return stream
    .text()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
