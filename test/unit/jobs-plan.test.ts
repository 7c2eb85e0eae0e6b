import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planTasks, type PlannedItem } from '../../src/jobs/plan-tasks.ts';
import { resolveJob, type Job } from '../../src/jobs/schema.ts';
import { searchKey } from '../../src/jobs/request-keys.ts';
import { InputFileError } from '../../src/input/input-error.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'netingest-plan-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let seq = 0;
async function jobWith(def: Record<string, unknown>, csv: string | Buffer): Promise<Job> {
  const name = `in${++seq}.csv`;
  await writeFile(join(dir, name), csv);
  const input = { ...(def.input as object), csv: name };
  return resolveJob({ ...def, input }, { displayName: 'jobs/t.json', defaultName: 't', cwd: dir });
}

async function plan(job: Job): Promise<PlannedItem[]> {
  const out: PlannedItem[] = [];
  for await (const item of planTasks(job)) out.push(item);
  return out;
}

describe('planTasks: similar-companies', () => {
  const def = {
    operation: 'similar-companies',
    input: { column: 'company_url' },
    request: { account: { location: ['germany'] }, num: 5 },
    pages: 2,
  };

  it('yields one task per input and page with the canonical URL, filters, page and num', async () => {
    const job = await jobWith(def, 'company_url,owner\nwww.network.com/company/Acme-Robotics/,jane\n');
    const url = 'https://www.network.com/company/acme-robotics';
    expect(await plan(job)).toEqual([
      { kind: 'task', inputKey: url, page: 1, line: 2, request: { url, account: { location: ['germany'] }, page: 1, num: 5 } },
      { kind: 'task', inputKey: url, page: 2, line: 2, request: { url, account: { location: ['germany'] }, page: 2, num: 5 } },
    ]);
  });

  it('collapses spellings of one company into one input and records invalid rows with line and reason', async () => {
    const csv = [
      'company_url,owner',
      'https://www.network.com/company/acme,jane', // 2
      'network.com/company/ACME/,omar', // 3: same company
      'https://www.network.com/in/jane-doe,li', // 4: a profile, not a company
      ',omar', // 5: empty cell
      'ftp://network.com/company/x,li', // 6: wrong scheme
      '"network.com/company/globex"', // 7: malformed row (too few fields)
      'http://network.com/company/acme?trk=1#top,li', // 8: same company again
      'network.com/company/globex,jane', // 9
      'https://de.network.com/company/acme,jane', // 10: the German edition, same company
      'm.network.com/company/globex/about,jane', // 11: the mobile site, same company
      'https://acme.com/company/about,jane', // 12: another host
      'https://network.com.evil.com/company/acme,jane', // 13: another host
    ].join('\n');
    const items = await plan(await jobWith({ ...def, pages: 1 }, csv));
    const acme = 'https://www.network.com/company/acme';
    const globex = 'https://www.network.com/company/globex';
    expect(items).toEqual([
      { kind: 'task', inputKey: acme, page: 1, line: 2, request: { url: acme, account: { location: ['germany'] }, page: 1, num: 5 } },
      { kind: 'duplicate', line: 3, inputKey: acme },
      { kind: 'invalid', line: 4, field: 'company_url', value: 'https://www.network.com/in/jane-doe', reason: expect.stringContaining('not a company page') },
      { kind: 'invalid', line: 5, field: 'company_url', value: '', reason: 'empty' },
      { kind: 'invalid', line: 6, field: 'company_url', value: 'ftp://network.com/company/x', reason: expect.stringContaining('scheme ftp') },
      { kind: 'invalid', line: 7, field: null, value: null, reason: 'malformed CSV row: expected 2 fields as in the header row, found 1' },
      { kind: 'duplicate', line: 8, inputKey: acme },
      { kind: 'task', inputKey: globex, page: 1, line: 9, request: { url: globex, account: { location: ['germany'] }, page: 1, num: 5 } },
      { kind: 'duplicate', line: 10, inputKey: acme },
      { kind: 'duplicate', line: 11, inputKey: globex },
      { kind: 'invalid', line: 12, field: 'company_url', value: 'https://acme.com/company/about', reason: expect.stringContaining('not on network.com (host acme.com') },
      { kind: 'invalid', line: 13, field: 'company_url', value: 'https://network.com.evil.com/company/acme', reason: expect.stringContaining('not on network.com') },
    ]);
  });

  it('records a URL cell that is not UTF-8 (a Latin-1 export) as invalid; other columns may be', async () => {
    const csv = Buffer.concat([
      Buffer.from('company_url,owner\n'),
      Buffer.from('network.com/company/caf\u00e9,jane\n', 'latin1'), // 2: the lookup would be of another URL
      Buffer.from('network.com/company/acme,Ren\u00e9\n', 'latin1'), // 3: only the owner is mangled
      Buffer.from('network.com/company/caf\u00e9-2,Ren\u00e9\n'), // 4: UTF-8
    ]);
    const items = await plan(await jobWith({ ...def, pages: 1 }, csv));
    const acme = 'https://www.network.com/company/acme';
    expect(items.map((i) => (i.kind === 'invalid' ? [i.line, i.field, i.reason] : [i.line, i.kind]))).toEqual([
      [2, 'company_url', expect.stringContaining('not valid UTF-8')],
      [3, 'task'],
      [4, 'task'],
    ]);
    expect(items[1]).toMatchObject({ inputKey: acme });
  });

  it('sends an empty account when the job sets no filters, and defaults num to 10', async () => {
    const job = await jobWith({ operation: 'similar-companies', input: { column: 'u' } }, 'u\nnetwork.com/company/a\n');
    const [task] = await plan(job);
    expect(task).toMatchObject({ kind: 'task', request: { url: 'https://www.network.com/company/a', account: {}, page: 1, num: 10 } });
  });

  it('throws InputFileError before any item when the column is missing', async () => {
    const job = await jobWith(def, 'url,owner\nnetwork.com/company/a,x\n');
    const err = await plan(job).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputFileError);
    expect((err as Error).message).toMatch(/no column "company_url".*"url", "owner"/);
  });

  it('throws InputFileError naming the file as written in the job when it is missing', async () => {
    const job = resolveJob({ ...def, input: { csv: 'data/missing.csv', column: 'company_url' } }, { displayName: 'j', cwd: dir, defaultName: 'j' });
    await expect(plan(job)).rejects.toThrow('data/missing.csv: cannot read input file: file not found');
  });
});

describe('planTasks: post-details', () => {
  it('yields one task per post with the canonical URL as the whole request', async () => {
    const csv = 'post_url;campaign\nhttps://www.network.com/posts/jane_x-activity-7123456789012345678-abcd/?utm=1;a\nnetwork.com/posts/jane_x-activity-7123456789012345678-abcd;b\nnetwork.com/company/acme;c\n';
    const items = await plan(await jobWith({ operation: 'post-details', input: { column: 'post_url' } }, csv));
    const url = 'https://www.network.com/posts/jane_x-activity-7123456789012345678-abcd';
    expect(items).toEqual([
      { kind: 'task', inputKey: url, page: 1, line: 2, request: { url } },
      { kind: 'duplicate', line: 3, inputKey: url },
      { kind: 'invalid', line: 4, field: 'post_url', value: 'network.com/company/acme', reason: expect.stringContaining('not a post') },
    ]);
  });
});

describe('planTasks: search-jobs', () => {
  const def = {
    operation: 'search-jobs',
    input: {},
    request: { timePosted: 'past_week', location: 'germany', jobTypes: ['full time'] },
    pages: 3,
  };

  it('pages through start 0, 10, 20 with one search key for all pages', async () => {
    const job = await jobWith(def, 'keywords\nrobotics engineer\n');
    const items = await plan(job);
    const query = { timePosted: 'past_week', location: 'germany', jobTypes: ['full time'], keywords: 'robotics engineer' };
    const key = searchKey(query);
    expect(key).toMatch(/^q_[0-9a-f]{16}$/);
    expect(items).toEqual([
      { kind: 'task', inputKey: key, page: 1, line: 2, request: { ...query, start: 0 } },
      { kind: 'task', inputKey: key, page: 2, line: 2, request: { ...query, start: 10 } },
      { kind: 'task', inputKey: key, page: 3, line: 2, request: { ...query, start: 20 } },
    ]);
  });

  it('takes absent or empty cells from the request, splits list cells on , or ; and trims', async () => {
    const csv = [
      'Keywords,location,timePosted,experienceLevels,companyIds,workplaceTypes,notes',
      'nurse,, ,"Entry level; associate",1441;22,,first', // empty location and timePosted take the defaults
      ' nurse ,germany,past_week,"entry level,associate",1441 ; 22,,second', // the same query spelled differently
      'welder,austria,past_24hrs,,,remote;hybrid,third',
    ].join('\n');
    const items = await plan(await jobWith({ ...def, pages: 1 }, csv));
    const nurse = {
      timePosted: 'past_week',
      location: 'germany',
      jobTypes: ['full time'],
      keywords: 'nurse',
      experienceLevels: ['entry level', 'associate'],
      companyIds: ['1441', '22'],
    };
    const welder = { timePosted: 'past_24hrs', location: 'austria', jobTypes: ['full time'], keywords: 'welder', workplaceTypes: ['remote', 'hybrid'] };
    expect(items).toEqual([
      { kind: 'task', inputKey: searchKey(nurse), page: 1, line: 2, request: { ...nurse, start: 0 } },
      { kind: 'duplicate', line: 3, inputKey: searchKey(nurse) },
      { kind: 'task', inputKey: searchKey(welder), page: 1, line: 4, request: { ...welder, start: 0 } },
    ]);
  });

  it('records rows with bad values or no parameters at all, and malformed rows', async () => {
    const csv = ['keywords,companyIds,jobTypes', 'a,acme,', 'b,,freelance', ',,', 'c,1', ',,', 'd,,'].join('\n');
    const items = await plan(await jobWith({ operation: 'search-jobs', input: {} }, csv));
    expect(items).toEqual([
      { kind: 'invalid', line: 2, field: 'companyIds', value: 'acme', reason: 'company ids are numeric; got "acme"' },
      { kind: 'invalid', line: 3, field: 'jobTypes', value: 'freelance', reason: expect.stringContaining('unknown jobTypes value "freelance"') },
      { kind: 'invalid', line: 5, field: null, value: null, reason: 'malformed CSV row: expected 3 fields as in the header row, found 2' },
      { kind: 'task', inputKey: searchKey({ keywords: 'd' }), page: 1, line: 7, request: { keywords: 'd', start: 0 } },
    ]);
  });

  it('records a row whose parameter cell is not UTF-8 as invalid, naming the column', async () => {
    const csv = Buffer.concat([Buffer.from('keywords,location\n'), Buffer.from('B\u00e4cker,m\u00fcnchen\n', 'latin1'), Buffer.from('welder,m\u00fcnchen\n')]);
    const items = await plan(await jobWith({ operation: 'search-jobs', input: {} }, csv));
    expect(items).toEqual([
      { kind: 'invalid', line: 2, field: 'keywords', value: 'B\uFFFDcker', reason: expect.stringContaining('save the file as UTF-8') },
      { kind: 'task', inputKey: searchKey({ keywords: 'welder', location: 'münchen' }), page: 1, line: 3, request: { keywords: 'welder', location: 'münchen', start: 0 } },
    ]);
  });

  it('records a row with every parameter cell empty when the job has no defaults', async () => {
    const csv = 'keywords,location,note\n,,only a note\n';
    const items = await plan(await jobWith({ operation: 'search-jobs', input: {} }, csv));
    expect(items).toEqual([{ kind: 'invalid', line: 2, field: null, value: null, reason: expect.stringContaining('no search parameters') }]);
  });

  it('refuses a column named almost like a parameter no column sets, naming the file, column and parameter; allows others', async () => {
    const cases: Array<[string, string, string]> = [
      ['keyword,location', 'keyword', 'keywords'], // the audit's case: searches went out with the location only
      ['keywords,job_types', 'job_types', 'jobTypes'],
      ['keywords,Time Posted', 'Time Posted', 'timePosted'],
      ['keywords,locaton,owner', 'locaton', 'location'],
      ['companyId', 'companyId', 'companyIds'],
    ];
    for (const [header, column, param] of cases) {
      const job = await jobWith(def, `${header}\nnurse,berlin,x\n`);
      const err = await plan(job).catch((e: unknown) => e);
      expect(err, header).toBeInstanceOf(InputFileError);
      expect((err as Error).message, header).toMatch(
        new RegExp(`^${job.input.csv}: line 1: column "${column}" is not a search parameter; did you mean "${param}"\\?`),
      );
    }
    // Other columns are left alone, and so is a near miss of a parameter that a column already sets.
    const job = await jobWith({ operation: 'search-jobs', input: {} }, 'Keywords,LOCATION,locations,owner,note,company\nnurse,berlin,x,jane,y,z\n');
    expect(await plan(job)).toEqual([
      { kind: 'task', inputKey: searchKey({ keywords: 'nurse', location: 'berlin' }), page: 1, line: 2, request: { keywords: 'nurse', location: 'berlin', start: 0 } },
    ]);
  });

  it('refuses a CSV without any parameter column', async () => {
    const job = await jobWith(def, 'query,place\nnurse,berlin\n');
    await expect(plan(job)).rejects.toThrow(/no column is named like a search parameter .*"query", "place"/);
  });
});
