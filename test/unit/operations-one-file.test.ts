// An operation is one file (issue #19 item 1): outside src/operations (and the spec's types and the sandbox, which
// serve the API rather than use it), no source names an operation, and the layers import only what they may.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/spec/types.ts';
import { OPERATION_SPECS } from '../../src/operations/index.ts';

const ROOT = join(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

/**
 * Where an operation's name may still be written:
 * - src/operations: the operations themselves; src/spec: the API's types, shared with the sandbox;
 *   src/sandbox: the stand-in service, which serves each operation's route.
 * - src/store/upgrades: one-time rewrites of data stored by older builds, in the forms those builds stored; they
 *   describe the past and must not follow the operations as they change.
 */
const ALLOWED = ['operations/', 'spec/', 'sandbox/', 'store/upgrades/'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts|cts|js|mjs|cjs)$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

/** `'name'`, `"name"` or `` `name` `` of any operation, with the line it is on. */
function operationLiterals(text: string): string[] {
  const found: string[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    for (const op of OPERATIONS) {
      for (const q of ["'", '"', '`']) if (line.includes(`${q}${op}${q}`)) found.push(`${i + 1}: ${line.trim()}`);
    }
  });
  return found;
}

function importsOf(text: string): string[] {
  return [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
}

describe('an operation is one file', () => {
  it('no source outside src/operations (and the allowed few) names an operation', () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const path = relative(SRC, file).split('\\').join('/');
      if (ALLOWED.some((a) => (a.endsWith('/') ? path.startsWith(a) : path === a))) continue;
      for (const hit of operationLiterals(readFileSync(file, 'utf8'))) offenders.push(`src/${path}:${hit}`);
    }
    expect(offenders).toEqual([]);
  });

  it('the check finds a literal when there is one (it cannot pass by reading nothing)', () => {
    expect(sourceFiles(SRC).length).toBeGreaterThan(50);
    expect(operationLiterals(`const x = job.operation === 'post-details';`)).toHaveLength(1);
    expect(operationLiterals('case "search-jobs":')).toHaveLength(1);
    expect(operationLiterals('// similar-companies pages, in a comment')).toHaveLength(0);
  });

  it('every operation is registered under its own name, in its own file', () => {
    expect(Object.keys(OPERATION_SPECS).sort()).toEqual([...OPERATIONS].sort());
    for (const op of OPERATIONS) {
      expect(OPERATION_SPECS[op].name).toBe(op);
      expect(readFileSync(join(SRC, 'operations', `${op}.ts`), 'utf8')).toContain(`satisfies OperationSpec<`);
    }
  });
});

describe('layers', () => {
  const filesUnder = (dir: string) => sourceFiles(join(SRC, dir)).map((f) => ({ path: relative(ROOT, f), imports: importsOf(readFileSync(f, 'utf8')) }));

  it('the api layer does not import the store (nor SQLite)', () => {
    const bad = filesUnder('api').flatMap((f) => f.imports.filter((i) => /\/store\/|better-sqlite3|^pg/.test(i)).map((i) => `${f.path} -> ${i}`));
    expect(bad).toEqual([]);
  });

  it('the operations import no store, client, runner, export or CLI code, and no SQLite: their row mapping is pure', () => {
    // Rows are typed from the one table definition (a misspelled column fails tsc): its types, erased at run time,
    // are the one thing the operations take from the store.
    const tableTypes = (f: { path: string }, i: string) =>
      /^(\.\.\/store\/(schema|tables)\.ts)$/.test(i) && new RegExp(`^import type [^;]*from '${i.replace(/\./g, '\\.')}'`, 'm').test(readFileSync(join(ROOT, f.path), 'utf8'));
    const bad = filesUnder('operations').flatMap((f) =>
      f.imports.filter((i) => /\/(store|api|runner|export|cli|threads)\/|better-sqlite3|^pg/.test(i) && !tableTypes(f, i)).map((i) => `${f.path} -> ${i}`),
    );
    expect(bad).toEqual([]);
  });

  it('the store imports no run engine, export or CLI code: the run engine calls it, never the other way', () => {
    const bad = filesUnder('store').flatMap((f) => f.imports.filter((i) => /\/(runner|export|cli)\//.test(i)).map((i) => `${f.path} -> ${i}`));
    expect(bad).toEqual([]);
  });

  it('the bottom layers (spec, urls, credits, errors.ts) import nothing above them', () => {
    const bad = ['spec', 'urls', 'credits'].flatMap((dir) =>
      filesUnder(dir).flatMap((f) => f.imports.filter((i) => i.startsWith('../') && !/^\.\.\/(spec\/|urls\/|credits\/|errors\.ts$)/.test(i)).map((i) => `${f.path} -> ${i}`)),
    );
    expect(bad).toEqual([]);
  });
});
