/**
 * Generated inputs for the soak test and the benchmarks: CSV files of unique company and post URLs (in the mixed
 * spellings users paste), search queries, and the job definitions that read them.
 */
import { createWriteStream, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { resolveJob, type Job, type JobDefinition } from '../../src/jobs/schema.ts';

/** The i-th post URL of a generated set `tag` (distinct tags give disjoint sets). */
export function postUrl(tag: string, i: number): string {
  const id = 7_100_000_000_000_000_000n + BigInt(i);
  const form = i % 3;
  if (form === 0) return `https://www.network.com/posts/${tag}-user${i}_topic-activity-${id}-ab${i % 97}`;
  if (form === 1) return `network.com/posts/${tag}-user${i}_topic-activity-${id}-ab${i % 97}/`;
  return `https://network.com/posts/${tag}-user${i}_topic-activity-${id}-ab${i % 97}?utm_source=share`;
}

/** The i-th company page URL of a generated set `tag`. */
export function companyUrl(tag: string, i: number): string {
  const form = i % 3;
  if (form === 0) return `https://www.network.com/company/${tag}-co-${i}`;
  if (form === 1) return `network.com/company/${tag}-co-${i}/`;
  return `https://network.com/company/${tag}-co-${i}/about/?trk=x`;
}

/**
 * Writes a one-column CSV of `count` URLs made by `urlOf` (plus a second column, as real exports have), streaming
 * so that millions of rows do not sit in memory. Every `notFoundEvery`-th row names a `notfound` input.
 */
export async function writeUrlCsv(
  file: string,
  column: string,
  count: number,
  urlOf: (i: number) => string,
  notFoundEvery = 0,
): Promise<void> {
  const out = createWriteStream(file);
  let chunk = `${column},note\n`;
  for (let i = 0; i < count; i++) {
    const url = notFoundEvery > 0 && i % notFoundEvery === notFoundEvery - 1 ? urlOf(i).replace('-user', '-notfound-user').replace('-co-', '-notfound-co-') : urlOf(i);
    chunk += `${url},row ${i}\n`;
    if (chunk.length > 64 * 1024) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
}

/** Writes a search-jobs input of `count` distinct queries. */
export function writeQueriesCsv(file: string, count: number): void {
  const places = ['germany', 'france', 'spain', 'italy', 'poland'];
  const lines = ['keywords,location,timePosted'];
  for (let i = 0; i < count; i++) {
    const keywords = i % 17 === 16 ? `notfound role ${i}` : `engineer ${i}`;
    lines.push(`${keywords},${places[i % places.length]},${i % 2 === 0 ? 'past_week' : ''}`);
  }
  writeFileSync(file, lines.join('\n') + '\n');
}

/** A job resolved from a definition as the loader would, relative to `cwd`. */
export function makeJob(definition: JobDefinition & { name: string }, cwd: string): Job {
  return resolveJob(definition, { displayName: `${definition.name}.json`, defaultName: definition.name, cwd });
}

/** Writes a job file (`<dir>/<name>.json`) and returns its path. */
export function writeJobFile(dir: string, definition: JobDefinition & { name: string }): string {
  const file = `${dir}/${definition.name}.json`;
  writeFileSync(file, JSON.stringify(definition, null, 2) + '\n');
  return file;
}
