/**
 * builtAfterSources: the rule by which the test suite rebuilds dist/ and a statement's child process, started from
 * the sources, loads its bundle instead of compiling them: the bundle newer than every source, the build script and
 * package.json, or not used at all.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { builtAfterSources } from '../../src/threads/start.ts';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A checkout with its files at `at` seconds (of 2026), and what to age or freshen. */
function checkout(): { root: string; built: string; touch: (path: string, at: number) => void } {
  const root = mkdtempSync(join(tmpdir(), 'netingest-build-'));
  roots.push(root);
  const touch = (path: string, at: number) => {
    const file = join(root, path);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, path);
    const time = new Date(Date.UTC(2026, 0, 1) + at * 1000);
    utimesSync(file, time, time);
  };
  for (const path of ['src/cli/main.ts', 'src/store/sqlite/statement-child.ts', 'scripts/build.mjs', 'package.json']) touch(path, 10);
  touch('dist/statement-child.js', 20);
  return { root, built: join(root, 'dist/statement-child.js'), touch };
}

it('is true for a bundle written after every source, the build script and package.json', () => {
  const { root, built } = checkout();
  expect(builtAfterSources(root, built)).toBe(true);
});

it('is false once any of them changes after the bundle, even deep under src/, and for a missing bundle', () => {
  for (const changed of ['src/store/sqlite/statement-child.ts', 'src/cli/main.ts', 'scripts/build.mjs', 'package.json']) {
    const { root, built, touch } = checkout();
    touch(changed, 30);
    expect(builtAfterSources(root, built), changed).toBe(false);
  }
  const { root } = checkout();
  expect(builtAfterSources(root, join(root, 'dist/missing.js'))).toBe(false);
});
