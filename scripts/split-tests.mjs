// `node scripts/split-tests.mjs [--dry-run]`: sorts the test files still at the top of test/ into folders by kind,
// so that `npm run test:unit` runs the fast ones alone, with no PostgreSQL server and no dist/ build:
//   test/pg/    uses a real PostgreSQL server (test/pg/use-pg.ts, pg-cluster.ts, engines.ts' forEachEngine, inject('pgUrl'))
//   test/e2e/   starts the CLI or other child processes (node:child_process, dist/bin.js)
//   test/unit/  the rest: in-process code, SQLite files, HTTP on 127.0.0.1
// A file's kind is read from what it uses, through the test helpers it imports. A top-level helper moves to the
// one folder all its users are in, else to test/support/. Each file is moved with `git mv`, and every relative
// import, `new URL('..', import.meta.url)` and `test/<file>` mention that pointed at a moved file is rewritten.
// Re-runnable: files already in a folder stay; an import left pointing at a file an earlier run moved (a branch
// merged since) is found again by its name.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TEST = join(ROOT, 'test');
const DRY = process.argv.includes('--dry-run');
const SELF = fileURLToPath(import.meta.url);
/** Top-level files of test/ that stay where they are: the suite's configuration and global setup. */
const STAYS = /^(global-setup\.ts|vitest(\.[\w-]+)?\.config\.ts)$/;
const CODE = /\.(ts|mts|cts|mjs|cjs|js)$/;
/** Folders whose text may name a test file (comments, docs, root-relative paths in code). */
const MENTIONING = ['src', 'test', 'bench', 'docs', 'scripts', '.ci', 'README.md', 'package.json', 'eslint.config.js', 'tsconfig.json'];

const USES_PG = [/\binject\(\s*['"]pgUrl['"]/, /\bforEachEngine\b/, /\bstartPgCluster\b/, /\bnewPgDatabase\b/, /\bcreateTestDatabase\b/];
const SPAWNS = [/from\s+['"](node:)?child_process['"]/, /\bdist\/bin\.js\b/, /['"]\.\.?\/[^'"]*dist\//];

/** Every file under dir, skipping node_modules and build output. */
function walk(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.built-') || entry.name === '.git') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, out);
    else out.push(path);
  }
  return out;
}

// The relative specifiers a file names: static and dynamic imports, re-exports, new URL(x, import.meta.url) and
// join(import.meta.dirname, x). Group 2 is the specifier.
const SPECIFIER = /((?:\bfrom|\bimport)\s*\(?\s*|\bnew URL\(\s*|\brequire\(\s*|\bimport\.meta\.dirname,\s*)(['"])(\.\.?(?:\/[^'"]*)?)\2/g;

function specifiers(text) {
  return [...text.matchAll(SPECIFIER)].map((m) => m[3]);
}

function resolveSpec(fromFile, spec) {
  return resolve(dirname(fromFile), spec);
}

function toSpec(fromFile, target, original) {
  let rel = relative(dirname(fromFile), target).split(sep).join('/');
  if (rel === '') rel = '.';
  if (!rel.startsWith('.')) rel = `./${rel}`;
  if (original.endsWith('/') && !rel.endsWith('/')) rel += '/';
  // './' and '.' name the same folder; keep the form the author wrote.
  if (original === './' && rel === './') return original;
  return rel;
}

const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' });

// --- what there is ----------------------------------------------------------------------------------------------
const topLevel = readdirSync(TEST, { withFileTypes: true }).filter((e) => e.isFile() && CODE.test(e.name) && !STAYS.test(e.name));
const topTests = topLevel.filter((e) => e.name.endsWith('.test.ts')).map((e) => join(TEST, e.name));
const topHelpers = topLevel.filter((e) => !e.name.endsWith('.test.ts')).map((e) => join(TEST, e.name));
const testFiles = walk(TEST).filter((f) => CODE.test(f));
const text = new Map(testFiles.map((f) => [f, readFileSync(f, 'utf8')]));

/** Where a specifier of `file` lands: the file itself, or one of the same name elsewhere in test/ (moved earlier). */
function findByName(target) {
  if (existsSync(target) || !target.startsWith(TEST + sep)) return target;
  const same = testFiles.filter((f) => basename(f) === basename(target));
  return same.length === 1 ? same[0] : target;
}

function importsOf(file) {
  return specifiers(text.get(file) ?? '')
    .map((s) => findByName(resolveSpec(file, s)))
    .filter((t) => text.has(t));
}

/** The test files a file reaches through its relative imports, itself included. */
function closure(file, seen = new Set()) {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const t of importsOf(file)) closure(t, seen);
  return seen;
}

const SRC = join(ROOT, 'src') + sep;
const STATIC_IMPORT = /\bfrom\s*(['"])(\.\.?\/[^'"]*)\1/g;
const srcText = new Map();

/** Whether a source file starts a child process when imported, itself or through its static imports (a command's lazy import aside). */
function srcSpawns(file, seen = new Set()) {
  if (seen.has(file) || !file.startsWith(SRC) || !existsSync(file)) return false;
  seen.add(file);
  if (!srcText.has(file)) srcText.set(file, readFileSync(file, 'utf8'));
  const source = srcText.get(file);
  if (SPAWNS[0].test(source)) return true;
  return [...source.matchAll(STATIC_IMPORT)].some((m) => srcSpawns(resolveSpec(file, m[2]), seen));
}

function kindOf(file) {
  const reached = [...closure(file)];
  const pg = join(TEST, 'pg') + sep;
  // The PostgreSQL helpers' own folder: anything it holds, but its worker bundles, stands for a server.
  if (reached.some((f) => (f.startsWith(pg) && !f.includes(`${sep}workers${sep}`)) || USES_PG.some((re) => re.test(text.get(f))))) return 'pg';
  if (reached.some((f) => SPAWNS.some((re) => re.test(text.get(f))))) return 'e2e';
  // A test of code that starts a child process (query's statement child) waits on one as a spawned CLI does.
  const seen = new Set();
  if (reached.some((f) => [...text.get(f).matchAll(STATIC_IMPORT)].some((m) => srcSpawns(resolveSpec(f, m[2]), seen)))) return 'e2e';
  return 'unit';
}

// --- where each goes ----------------------------------------------------------------------------------------------
/** old absolute path -> new absolute path */
const moves = new Map();
for (const file of topTests) moves.set(file, join(TEST, kindOf(file), basename(file)));

/** The folder each file ends in (moved or not). */
const finalDir = (f) => dirname(moves.get(f) ?? f);

// A helper goes where its users are: decided once every user's own place is known (helpers use helpers).
const outsideUsers = new Set();
for (const f of walk(ROOT).filter((p) => CODE.test(p) && !p.startsWith(TEST + sep) && !p.includes(`${sep}node_modules${sep}`) && !p.includes(`${sep}dist${sep}`))) {
  for (const s of specifiers(readFileSync(f, 'utf8'))) outsideUsers.add(resolveSpec(f, s));
}
const pending = new Set(topHelpers);
while (pending.size > 0) {
  let decided = false;
  for (const helper of pending) {
    // Its users: the files importing it, and those naming it from the root (a script a test starts).
    const named = new RegExp(`(?<![\\w.-])test/${basename(helper).replaceAll('.', '\\.')}\\b`);
    const users = testFiles.filter((f) => f !== helper && (importsOf(f).includes(helper) || named.test(text.get(f))));
    if (users.some((u) => pending.has(u))) continue;
    const dirs = new Set(users.map(finalDir));
    const only = dirs.size === 1 ? [...dirs][0] : null;
    const dest = !outsideUsers.has(helper) && only && only !== TEST ? only : join(TEST, 'support');
    moves.set(helper, join(dest, basename(helper)));
    pending.delete(helper);
    decided = true;
  }
  // Helpers that use each other in a ring: shared.
  if (!decided) {
    for (const helper of pending) moves.set(helper, join(TEST, 'support', basename(helper)));
    pending.clear();
  }
}
for (const [from, to] of moves) if (from === to) moves.delete(from);

// --- rewrite ------------------------------------------------------------------------------------------------------
const newPath = (f) => moves.get(f) ?? f;
const movedName = new Map([...moves].map(([from, to]) => [relative(ROOT, from).split(sep).join('/'), relative(ROOT, to).split(sep).join('/')]));
const afterByName = new Map();
for (const f of testFiles) {
  const name = basename(newPath(f));
  afterByName.set(name, afterByName.has(name) ? null : newPath(f));
}

/** A specifier's target once the moves are made: moved with its file, or found by its name when it was moved before. */
function targetAfter(oldTarget) {
  if (moves.has(oldTarget)) return moves.get(oldTarget);
  if (existsSync(oldTarget) || !oldTarget.startsWith(TEST + sep)) return oldTarget;
  return afterByName.get(basename(oldTarget)) ?? oldTarget;
}

/**
 * Where `spec` of `file` points. A file an earlier run moved into a folder may have been edited since on a branch
 * that still had it at the top of test/ (a merge carries the edit over the move): a specifier that leads nowhere
 * from the folder but somewhere from the top was written from there.
 */
function resolveFrom(file, spec) {
  const here = resolveSpec(file, spec);
  if (existsSync(here) || moves.has(here) || dirname(dirname(file)) !== TEST) return here;
  const fromTop = resolveSpec(join(TEST, basename(file)), spec);
  return existsSync(fromTop) || moves.has(fromTop) ? fromTop : here;
}

function rewriteCode(oldFile, newFile, source) {
  return source.replace(SPECIFIER, (whole, lead, quote, spec) => {
    const before = lead.startsWith('new URL') ? resolveSpec(oldFile, spec) : resolveFrom(oldFile, spec);
    const target = targetAfter(before);
    // Only what the moves changed: a file that stays keeps its other specifiers as written.
    if (oldFile === newFile && target === resolveSpec(oldFile, spec)) return whole;
    // An import of nothing there is text for a file the test writes elsewhere (a job importing './helper.ts');
    // new URL(x, import.meta.url) is always this file's own path (dist/ may not be built yet).
    const there = moves.has(before) || existsSync(before) || existsSync(target);
    if (!lead.startsWith('new URL') && !there) return whole;
    const next = toSpec(newFile, target, spec);
    return next === spec ? whole : `${lead}${quote}${next}${quote}`;
  });
}

/** `test/<name>` written from the package root (comments, docs, join(ROOT, 'test/x.ts')): the file's new place. */
function rewriteMentions(source) {
  return source.replace(/(?<![\w.-])test\/([\w.-]+\.(?:ts|mjs|cjs|js))\b/g, (whole, name) => {
    const moved = movedName.get(`test/${name}`);
    if (moved) return moved;
    if (existsSync(join(TEST, name)) && !moves.has(join(TEST, name))) return whole;
    const found = afterByName.get(name);
    return found ? relative(ROOT, found).split(sep).join('/') : whole;
  });
}

const mentioning = MENTIONING.map((p) => join(ROOT, p))
  .filter((p) => existsSync(p))
  .flatMap((p) => (statSync(p).isDirectory() ? walk(p) : [p]))
  .filter((p) => p !== SELF && /\.(ts|mts|cts|mjs|cjs|js|json|md|sh)$|\/run$/.test(p));

const writes = new Map();
for (const file of new Set([...mentioning, ...testFiles])) {
  const before = readFileSync(file, 'utf8');
  let after = CODE.test(file) ? rewriteCode(file, newPath(file), before) : before;
  after = rewriteMentions(after);
  if (after !== before) writes.set(newPath(file), after);
}

const kinds = {};
for (const [from, to] of moves) (kinds[relative(TEST, dirname(to))] ??= []).push(basename(from));
for (const [kind, names] of Object.entries(kinds).sort()) console.log(`test/${kind}/ (${names.length}): ${names.sort().join(' ')}`);
console.log(`${moves.size} files to move, ${writes.size} files rewritten`);
if (DRY) process.exit(0);

for (const [from, to] of moves) {
  mkdirSync(dirname(to), { recursive: true });
  git('mv', relative(ROOT, from), relative(ROOT, to));
}
for (const [file, content] of writes) writeFileSync(file, content);
if (writes.size > 0) git('add', ...[...writes.keys()].map((f) => relative(ROOT, f)));
