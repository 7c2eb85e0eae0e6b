import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inProcess } from '../support/run-helpers.ts';
import { describe, expect, it } from 'vitest';
import { DATABASE_URL_ENV, locateDataset } from '../../src/store/locator.ts';
import { UsageError } from '../../src/errors.ts';
import { redactDatabaseUrl } from '../../src/store/pg/database-url.ts';

const noEnv = {};

function refusal(options: Parameters<typeof locateDataset>[0]): UsageError {
  try {
    locateDataset(options);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error('expected a refusal');
}

describe('locateDataset', () => {
  it('keeps SQLite for nothing or a file path', () => {
    expect(locateDataset({ env: noEnv })).toEqual({ engine: 'sqlite', file: 'data/netingest.db' });
    expect(locateDataset({ db: 'data/other.db', env: noEnv })).toEqual({ engine: 'sqlite', file: 'data/other.db' });
    expect(locateDataset({ db: '/abs/path/with:colon.db', env: noEnv })).toEqual({ engine: 'sqlite', file: '/abs/path/with:colon.db' });
  });

  it('selects PostgreSQL for a postgres:// or postgresql:// --db, hiding the password in the shown URL', () => {
    expect(locateDataset({ db: 'postgres://u@db.example:5432/netingest', env: noEnv })).toEqual({
      engine: 'postgres', url: 'postgres://u@db.example:5432/netingest', shownUrl: 'postgres://u@db.example:5432/netingest',
    });
    const located = locateDataset({ db: 'postgresql://u:p%40ss@db.example/netingest?sslmode=verify-full', env: noEnv });
    expect(located.engine).toBe('postgres');
    expect(located).toMatchObject({ url: 'postgresql://u:p%40ss@db.example/netingest?sslmode=verify-full' });
    expect(located.engine === 'postgres' && located.shownUrl).toBe('postgresql://u:***@db.example/netingest?sslmode=verify-full');
  });

  it(`reads ${DATABASE_URL_ENV} when --db is not given, and --db wins over it`, () => {
    const env = { [DATABASE_URL_ENV]: 'postgres://u:pw@h/dataset' };
    expect(locateDataset({ env })).toMatchObject({ engine: 'postgres', url: 'postgres://u:pw@h/dataset', shownUrl: 'postgres://u:***@h/dataset' });
    expect(locateDataset({ env, db: 'local.db' })).toEqual({ engine: 'sqlite', file: 'local.db' });
    expect(locateDataset({ env: { [DATABASE_URL_ENV]: '  ' } })).toEqual({ engine: 'sqlite', file: 'data/netingest.db' });
  });

  it('accepts a socket folder given as ?host=, with or without a user and password before an empty host', () => {
    expect(locateDataset({ db: 'postgres:///netingest?host=/var/run/postgresql', env: noEnv }).engine).toBe('postgres');
    // Cloud SQL's proxy documents this form: a URL parser refuses credentials with no host, node-postgres does not.
    expect(locateDataset({ db: 'postgres://app:hunter2@/netingest?host=/cloudsql/proj:region:inst', env: noEnv }))
      .toMatchObject({ engine: 'postgres', shownUrl: 'postgres://app:***@/netingest?host=/cloudsql/proj:region:inst' });
  });

  it('refuses what cannot be a dataset, naming it without the password', () => {
    expect(refusal({ db: 'postgres:///netingest', env: noEnv }).message).toMatch(/names no host/);
    expect(refusal({ db: 'postgres://u:hunter2@/netingest', env: noEnv }).message).toMatch(/names no host/);
    expect(refusal({ db: 'postgres://u:hunter2@h:5432', env: noEnv }).message).toMatch(/names no database/);
    expect(refusal({ db: 'postgres://u:hunter2@h/a/b', env: noEnv }).message).toMatch(/not a database name/);
    expect(refusal({ db: 'postgres://u:hunter2@h/db?sslmode=sometimes', env: noEnv }).message).toMatch(/sslmode=sometimes is not one of/);
    expect(refusal({ db: 'postgres://u:hunter2@h:99999/db', env: noEnv }).message).toMatch(/not a valid URL/);
    expect(refusal({ db: 'mysql://u:hunter2@h/db', env: noEnv }).message).toMatch(/mysql:\/\/ is not a database netingest can use/);
    // `--db "$UNSET_VAR"` in a cron line: not the default dataset, which it would then write to.
    expect(refusal({ db: '  ', env: noEnv }).message).toBe('--db is empty: give a SQLite file path or a postgres:// URL (or leave --db out for data/netingest.db)');
    expect(refusal({ env: { [DATABASE_URL_ENV]: 'data/x.db' } }).message).toMatch(new RegExp(`${DATABASE_URL_ENV} must be a postgres`));
    for (const db of ['postgres://u:hunter2@/netingest', 'postgres://u:hunter2@h:99999/db', 'mysql://u:hunter2@h/db', 'postgres://u:hunter2@h/db?sslmode=x']) {
      expect(refusal({ db, env: noEnv }).message).not.toContain('hunter2');
    }
  });

  it('refuses a PostgreSQL URL mistyped or without its scheme, which a SQLite path would make a new, empty dataset of', () => {
    for (const db of ['postgres:/u:hunter2@h:5432/db', 'postgresql:u:hunter2@h/db', 'postgres//u:hunter2@h/db', 'postgres/u:hunter2@h/db', 'u:hunter2@h/db']) {
      const message = refusal({ db, env: noEnv }).message;
      expect(message).toMatch(/not a postgres:\/\/ URL .*not taken for a SQLite file's path/);
      expect(message).not.toContain('hunter2');
    }
    // The same with no `//`, from the environment: refused, its password hidden.
    const fromEnv = refusal({ env: { [DATABASE_URL_ENV]: 'postgres:/u:hunter2@h/db' } }).message;
    expect(fromEnv).toContain('got postgres:***@h/db');
    expect(refusal({ env: { [DATABASE_URL_ENV]: 'u:hunter2@h/db' } }).message).not.toContain('hunter2');
  });

  it('refuses a stray % in the user, password or database name, which the driver would stop on as "URI malformed"', () => {
    for (const db of ['postgres://u:hunter2@h/pw%zzdb', 'postgres://u:hun%zzter2@h/db', 'postgres://u%z:hunter2@h/db']) {
      const message = refusal({ db, env: noEnv }).message;
      expect(message).toMatch(/holds a % not followed by two hex digits/);
      expect(message).not.toContain('hunter2');
    }
  });

  // RFC 3986's reserved characters, and the two a password generator likes besides; written unencoded, as a
  // user pastes a generated password.
  const RESERVED = [...":/?#[]@!$&'()*+,;=", '%', ' '];
  const secretWith = (c: string) => `k3yL${c}k3yR`;
  const shown = (text: string) => expect(text.includes('k3yL') || text.includes('k3yR'), text).toBe(false);

  it('never shows a password holding any reserved character, whether the URL is taken or refused', () => {
    for (const c of RESERVED) {
      for (const url of [
        `postgres://analyst:${secretWith(c)}@db.example:5432/leads`,
        `postgres://analyst:${secretWith(c)}@db.example/leads?sslmode=require`,
        `postgresql://analyst:${secretWith(c)}@/leads?host=/var/run/postgresql`,
        `postgres://db.example/leads?password=${secretWith(c)}`,
        // libpq's passphrase of the client key, in a URL written for psql.
        `postgres://analyst@db.example/leads?sslmode=require&sslpassword=${secretWith(c)}`,
      ]) {
        shown(redactDatabaseUrl(url));
        let text: string;
        try {
          const located = locateDataset({ db: url, env: noEnv });
          text = located.engine === 'postgres' ? located.shownUrl : '';
        } catch (err) {
          text = (err as Error).message;
        }
        shown(text);
        try {
          text = JSON.stringify(locateDataset({ env: { [DATABASE_URL_ENV]: url } }));
          text = text.replace(JSON.stringify(url).slice(1, -1), '');
        } catch (err) {
          text = (err as Error).message;
        }
        shown(text);
      }
    }
  });

  it('refuses a password whose `/`, `?` or `#` would be read as the path or query, telling to percent-encode it', () => {
    for (const c of ['/', '?', '#']) {
      const message = refusal({ db: `postgres://u:${secretWith(c)}@h/db`, env: noEnv }).message;
      expect(message).toMatch(/not a valid URL .*percent-encode/);
      expect(message).toContain('postgres://***@h/db');
    }
    // `12/ab@h/db` parses as host u, port 12, database "ab@h/db": its name would quote the password.
    expect(refusal({ db: 'postgres://u:12/k3yR@h/db', env: noEnv }).message).toBe('--db postgres://***@h/db: not a valid URL (postgres://user:password@host:5432/database; percent-encode special characters in the password)');
  });
});

describe('copy --to', () => {
  it.each([['postgres://u@db.example/'], ['mysql://u@db.example/netingest']])('%s: the message names --to, the flag given, not --db', async (to) => {
    const cli = await inProcess(['copy', '--from', 'data/netingest.db', '--to', to]);
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stderr).toContain(`--to ${to}`);
    expect(cli.stderr).not.toContain('--db');
  });
});

describe('copy --from', () => {
  it('refuses a postgres:// URL (the direction mistaken) without printing its password', async () => {
    const cli = await inProcess(['copy', '--from', 'postgres://u:k3yR-SECRET@db.example:5432/leads', '--to', 'postgres://u@db.example/other']);
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stderr).toContain('--from postgres://u:***@db.example:5432/leads: copy reads a SQLite file');
    expect(cli.stderr + cli.stdout).not.toContain('k3yR-SECRET');
  });
});

describe('--db naming a side file of a SQLite database', () => {
  it('refuses the -wal, -shm or -journal of an existing database, where a run would store what the database then deletes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netingest-side-file-'));
    try {
      const db = join(dir, 'netingest.db');
      writeFileSync(db, '');
      writeFileSync(join(dir, 'job.json'), JSON.stringify({ operation: 'similar-companies', input: { csv: join(dir, 'in.csv'), column: 'u' } }));
      writeFileSync(join(dir, 'in.csv'), 'u\nnetwork.com/company/acme\n');
      const env = { NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'side-file-token' };
      for (const side of ['-wal', '-shm', '-journal']) {
        writeFileSync(`${db}${side}`, '');
        const run = await inProcess(['run', join(dir, 'job.json'), '--db', `${db}${side}`], env);
        expect(run.code, run.stderr).toBe(2);
        expect(run.stderr).toContain(`--db ${db}${side} is the ${side.slice(1)} file SQLite keeps beside the database ${db}, not a database: give --db ${db}`);
        expect((await inProcess(['status', '--db', `${db}${side}`])).code).toBe(2);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
