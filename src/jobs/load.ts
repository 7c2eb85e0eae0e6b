import { readFile, readdir, realpath } from 'node:fs/promises';
import { basename, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AsyncLocalStorage } from 'node:async_hooks';
import { JobFileError, formatJobIssue, type JobIssue } from './job-error.ts';
import { describeFsError } from '../input/input-error.ts';
import { resolveJob, type Job } from './schema.ts';
import { watchModuleLoad } from './load-watchdog.ts';
import { redact } from '../api/redact.ts';
import { API_TOKEN_ENV } from '../api/config.ts';

/**
 * `cwd`: what relative paths (the job file, `input.csv`) resolve against (default process.cwd()); the limits:
 * JOB_LOAD_DEFAULTS'.
 */
export interface LoadJobOptions extends Partial<Record<keyof typeof JOB_LOAD_DEFAULTS, number>> {
  cwd?: string;
}

export const JOB_LOAD_DEFAULTS = {
  /**
   * How long a module job may take to load and to give its default export (a promise is awaited): past it the job is
   * refused, naming its file, rather than the command waiting on it for ever (or ending in silence, exit 13).
   * @default 30_000
   */
  moduleTimeoutMs: 30_000,
  /**
   * How long a module job's own code may block the process while it loads (an endless loop, which no timer or signal
   * can stop) before the file is named on stderr and the process killed (load-watchdog.ts).
   * @default 35_000
   */
  blockedLimitMs: 35_000,
} as const;

/** Extensions loadJob accepts; loadAllJobs picks up `.ts` and `.json` only. */
const MODULE_EXTENSIONS = new Set(['.ts', '.mts', '.js', '.mjs']);
const SCANNED_EXTENSIONS = new Set(['.ts', '.json']);

/** Loads, validates and resolves one job file (`.json`, or a module whose default export is the definition). */
export async function loadJob(path: string, options: LoadJobOptions = {}): Promise<Job> {
  const cwd = options.cwd ?? process.cwd();
  const file = isAbsolute(path) ? path : resolve(cwd, path);
  const displayName = displayPath(file, cwd);
  const ext = extname(file).toLowerCase();
  const resolveIt = (value: unknown) => resolveJob(value, { displayName, file, defaultName: basename(file, extname(file)), cwd });
  if (ext === '.json') return resolveIt(await readJson(file, displayName));
  if (!MODULE_EXTENSIONS.has(ext)) throw fileError(displayName, `not a job file: expected .json or .ts (got "${ext || 'no extension'}")`);
  const { moduleTimeoutMs, blockedLimitMs } = JOB_LOAD_DEFAULTS;
  const limits = { moduleTimeoutMs: options.moduleTimeoutMs ?? moduleTimeoutMs, blockedLimitMs: options.blockedLimitMs ?? blockedLimitMs };
  return importDefault(file, displayName, cwd, limits, resolveIt);
}

/** Loads every `.ts` and `.json` job in `dir` by name (`.d.ts`, `_*`, `.*` skipped), reporting all problems at once. */
export async function loadAllJobs(dir: string, options: LoadJobOptions = {}): Promise<Job[]> {
  const cwd = options.cwd ?? process.cwd();
  const { jobs, broken, duplicates } = await loadJobFiles(await listJobFiles(dir, options), options);
  const errors = [...broken, ...duplicates];
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) {
    const absDir = isAbsolute(dir) ? dir : resolve(cwd, dir);
    throw new JobFileError(
      displayPath(absDir, cwd),
      errors.flatMap((e) => e.issues.map((i): JobIssue => ({ field: '', message: formatJobIssue(e.file, i) }))),
    );
  }
  return jobs;
}

/** The job files of `dir` that loadAllJobs reads, as absolute paths sorted by name; throws if `dir` cannot be read. */
export async function listJobFiles(dir: string, options: LoadJobOptions = {}): Promise<string[]> {
  const cwd = options.cwd ?? process.cwd();
  const absDir = isAbsolute(dir) ? dir : resolve(cwd, dir);
  const names = await readdir(absDir).catch((err: NodeJS.ErrnoException) => {
    const why = err.code === 'ENOENT' ? 'directory not found' : err.code === 'ENOTDIR' ? 'not a directory' : err.message;
    throw fileError(displayPath(absDir, cwd), `cannot read the jobs directory: ${why}`, err);
  });
  return names
    .filter((n) => SCANNED_EXTENSIONS.has(extname(n).toLowerCase()) && !n.endsWith('.d.ts') && !/^[_.]/.test(n))
    .sort()
    .map((n) => join(absDir, n));
}

/**
 * Loads job files one by one, so a broken one does not hide the others: the jobs that loaded in file order, an error
 * per file that cannot be used (`broken`), and one per job whose name an earlier file's job has (`duplicates`).
 */
export async function loadJobFiles(paths: readonly string[], options: LoadJobOptions = {}) {
  const cwd = options.cwd ?? process.cwd();
  const out = { jobs: [] as Job[], broken: [] as JobFileError[], duplicates: [] as JobFileError[] };
  const byName = new Map<string, string>();
  for (const path of paths) {
    let job: Job;
    try {
      job = await loadJob(path, { ...options, cwd });
    } catch (err) {
      if (err instanceof JobFileError) out.broken.push(err);
      else throw err;
      continue;
    }
    const shown = displayPath(isAbsolute(path) ? path : resolve(cwd, path), cwd);
    const earlier = byName.get(job.name);
    if (earlier !== undefined) {
      out.duplicates.push(fileError(shown, `name "${job.name}" is already used by ${earlier}; job names must be unique`, undefined, 'name'));
      continue;
    }
    byName.set(job.name, shown);
    out.jobs.push(job);
  }
  return out;
}

async function readJson(file: string, displayName: string): Promise<unknown> {
  const read = await readFile(file, 'utf8').catch((err: unknown) => {
    throw fileError(displayName, `cannot read job file: ${describeFsError(err)}`, err);
  });
  const text = read.charCodeAt(0) === 0xfeff ? read.slice(1) : read;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch (err) {
    const { message, line, column } = describeJsonSyntaxError(text, err as Error);
    throw new JobFileError(displayName, [{ field: '', message: `invalid JSON: ${message}`, line, column }], { cause: err });
  }
  // JSON.parse keeps the last of a key written twice: a second "credits" block would drop the first's maxPerRun unsaid.
  const twice = firstDuplicateKey(text);
  if (twice !== null) {
    const before = text.slice(0, twice.offset);
    const at = { line: before.split('\n').length, column: twice.offset - before.lastIndexOf('\n') };
    throw new JobFileError(displayName, [{ field: '', message: `${JSON.stringify(twice.key)} is written twice in one object (JSON would keep only the last): merge them`, ...at }]);
  }
  return parsed;
}

/** The first key written twice in one object of valid JSON `text`, and where the second one starts. */
export function firstDuplicateKey(text: string): { key: string; offset: number } | null {
  // One entry per open object (its keys so far) or array (null).
  const open: (Set<string> | null)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{' || c === '[') open.push(c === '{' ? new Set() : null);
    else if (c === '}' || c === ']') open.pop();
    else if (c === '"') {
      const start = i;
      i = stringEnd(text, i);
      const keys = open.at(-1);
      if (!keys || !followedByColon(text, i + 1)) continue;
      const key = JSON.parse(text.slice(start, i + 1)) as string;
      if (keys.has(key)) return { key, offset: start };
      keys.add(key);
    }
  }
  return null;
}

/** Whether the next character from `from` that is not a blank is a colon: the string before it is a key. */
function followedByColon(text: string, from: number): boolean {
  let i = from;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  return text[i] === ':';
}

/** Index of the quote closing the JSON string that opens at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i;
}

async function importDefault(
  file: string, displayName: string, cwd: string, limits: { moduleTimeoutMs: number; blockedLimitMs: number }, resolveIt: (value: unknown) => Job,
): Promise<Job> {
  const loaded = watchModuleLoad(displayName, limits.blockedLimitMs);
  guardExit();
  loading.add(displayName);
  try {
    // The export is read and validated as job code: a getter or Proxy of it runs as it is read, so what it throws (or a
    // process.exit) refuses the job, naming its file, with the token hidden, like a throw while loading.
    return await jobCode.run(displayName, async () => {
      try {
        return resolveIt(await importDefaultOf(file, displayName, cwd, limits.moduleTimeoutMs));
      } catch (err) {
        if (err instanceof JobFileError) throw err;
        throw fileError(displayName, `its default export could not be read: ${jobCodeMessage(err)}`, err);
      }
    });
  } finally {
    loading.delete(displayName);
    loaded();
  }
}

/** Set while a job's code runs as it loads (its module, its default export's promise); netingest's own code runs outside. */
const jobCode = new AsyncLocalStorage<string>();
/** The job files whose load is under way (by displayName, jobCode's store). */
const loading = new Set<string>();
let exitGuarded = false;

/**
 * A job's process.exit() would end the command with the job's code (0 under cron: a night that did nothing, or a run
 * cut off with paid answers unwritten, logged as fine). While its file loads it throws instead, so the job is refused
 * as broken; later (a timer it set) it is ignored and said. netingest's own exits (a stop signal) go through. Kept for
 * the process's life: a job's timers carry its context (jobCode) as long as they live.
 */
function guardExit(): void {
  if (exitGuarded) return;
  exitGuarded = true;
  const exit = process.exit;
  process.exit = ((code?: number | string | null) => {
    const job = jobCode.getStore();
    if (job === undefined) return exit.call(process, code);
    const why = `called process.exit(${code ?? ''}): a job file defines a job, it does not end the process`;
    if (loading.has(job)) throw new Error(why);
    process.stderr.write(`netingest: warning: ${job}: its code ${why}: ignored, the command goes on\n`);
  }) as typeof process.exit;
}

async function importDefaultOf(file: string, displayName: string, cwd: string, timeoutMs: number): Promise<unknown> {
  let mod: Record<string, unknown>;
  try {
    // tsImport, not import(): a .ts job outside an ESM package is compiled as CommonJS, and a plain import() of it
    // fails with a require() cycle. tsx is imported here, not at the top: only a module job needs its start-up cost.
    const { tsImport } = await import('tsx/esm/api');
    mod = (await within(tsImport(pathToFileURL(file).href, import.meta.url), timeoutMs, displayName, 'to load')) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof JobFileError) throw err;
    const code = (err as NodeJS.ErrnoException | null | undefined)?.code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((err as Error).message).includes(file)) {
      throw fileError(displayName, 'cannot read job file: file not found', err);
    }
    const compile = await describeCompileError(err, file);
    if (compile) throw new JobFileError(displayName, await Promise.all(compile.map((e) => compileIssue(e, file, cwd))), { cause: err });
    // CommonJS errors append a "Require stack" naming the loader's internal namespace: noise to a user.
    const reason = jobCodeMessage(err).replace(/\nRequire stack:[\s\S]*$/, '');
    throw fileError(displayName, `failed to load: ${reason}`, err);
  }
  // Compiled as CommonJS (see above), the module's `export default` is module.exports.default.
  const exported = mod.default as { __esModule?: unknown; default?: unknown } | undefined;
  const value = exported !== null && typeof exported === 'object' && exported.__esModule === true ? exported.default : exported;
  if (value === undefined) {
    throw fileError(displayName, 'has no default export: write `export default defineJob({ ... })`');
  }
  if (typeof (value as { then?: unknown } | null)?.then !== 'function') return value;
  // A promise of the definition: awaited here, so its failure names the job (not "unexpected error").
  return within(value as Promise<unknown>, timeoutMs, displayName, 'to give its default export').catch((err: unknown) => {
    if (err instanceof JobFileError) throw err;
    throw fileError(displayName, `its default export failed: ${jobCodeMessage(err)}`, err);
  });
}

/** What the job's code threw, the API token hidden: the code sees it in its environment, and a skipped job's message is stored (runs.error). */
function jobCodeMessage(err: unknown): string {
  let text: string;
  try {
    text = err instanceof Error ? String(err.message) : String(err);
  } catch {
    // Object.create(null), or a message getter that throws: nothing to show but what it is.
    text = `a thrown ${typeof err} that cannot be shown as text`;
  }
  return redact(text, [process.env[API_TOKEN_ENV]?.trim() ?? '']);
}

/** `promise`, or a JobFileError once `timeoutMs` pass (the timer keeps the process alive until one of them). */
async function within<T>(promise: Promise<T>, timeoutMs: number, displayName: string, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(fileError(displayName, `took more than ${timeoutMs / 1000} s ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A compile error as an issue: at its line and column when it is in the job file, else naming the file it is in. */
async function compileIssue(error: CompileError, jobFile: string, cwd: string): Promise<JobIssue> {
  if (await sameFile(error.file, jobFile)) return { field: '', message: error.message, line: error.line, column: error.column };
  const where = error.line === undefined || error.column === undefined ? '' : `:${error.line}:${error.column}`;
  return { field: '', message: `failed to load: ${displayPath(resolve(cwd, error.file), cwd)}${where}: ${error.message}` };
}

/** Whether two paths name one file; the compiler may name it by its real path, with symlinks resolved. */
async function sameFile(a: string, b: string): Promise<boolean> {
  if (a === b) return true;
  const real = (p: string) => realpath(p).catch(() => p);
  return (await real(a)) === (await real(b));
}

function fileError(displayName: string, message: string, cause?: unknown, field = ''): JobFileError {
  return new JobFileError(displayName, [{ field, message }], cause === undefined ? undefined : { cause });
}

/** A path relative to cwd when it lies inside it (`jobs/leads.json`), else absolute. */
function displayPath(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel.split(sep).join('/') : file;
}

/** One error the compiler found in a module: in which file, where (1-based, in characters) and what. */
interface CompileError {
  /** The file as the compiler names it (an absolute path). */
  file: string;
  line?: number;
  column?: number;
  /** What is wrong, with the language named: `invalid TypeScript: Expected identifier but found ","`. */
  message: string;
}

const PREAMBLE = /^Transform failed with \d+ errors?:\n/;
const LOCATED = /^(.+):(\d+):(\d+): ERROR: (.*)$/;

/** A module's compile errors, else undefined: tsx drops esbuild's `errors`, so they are read from `file:line:column: ERROR:` lines (byte columns). */
async function describeCompileError(err: unknown, moduleFile: string): Promise<CompileError[] | undefined> {
  if (!(err instanceof Error) || err.name !== 'TransformError' || !PREAMBLE.test(err.message)) return undefined;
  const out: CompileError[] = [];
  for (const text of err.message.replace(PREAMBLE, '').split('\n')) {
    const located = LOCATED.exec(text);
    if (located) {
      const [, file, line, byteColumn, what] = located as unknown as [string, string, string, string, string];
      const column = await charColumn(file, Number(line), Number(byteColumn));
      out.push({ file, line: Number(line), column, message: `${invalidIn(file)}: ${what}` });
    } else if (text.startsWith('error: ')) {
      out.push({ file: moduleFile, message: `${invalidIn(moduleFile)}: ${text.slice('error: '.length)}` });
    }
    // esbuild ends a long list with "...": the errors shown are enough to start fixing.
  }
  return out.length > 0 ? out : undefined;
}

/** `invalid TypeScript` or `invalid JavaScript`, by the file's extension. */
function invalidIn(file: string): string {
  return /^\.[cm]?tsx?$/i.test(extname(file)) ? 'invalid TypeScript' : 'invalid JavaScript';
}

/** The 1-based character column of a 0-based UTF-8 byte column, as an editor counts (byte column + 1 if unreadable). */
async function charColumn(file: string, line: number, byteColumn: number): Promise<number> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  const lineText = text?.replace(/^\ufeff/, '').split('\n')[line - 1];
  if (lineText === undefined) return byteColumn + 1;
  return Buffer.from(lineText, 'utf8').subarray(0, byteColumn).toString('utf8').length + 1;
}

/** Why JSON.parse refused `text` and where (1-based line, column): from its message, else by jsonErrorOffset (Node 20 omits it in some). */
export function describeJsonSyntaxError(text: string, err: Error) {
  const raw = err.message.replace(/\s*\(line \d+ column \d+\)\s*$/, '');
  const message = raw
    // The excerpt can run over lines; a control character as the token is shown escaped (a raw CR would garble the line).
    .replace(/^Unexpected token '(.+?)', .*is not valid JSON$/s, (_all, token: string) => `Unexpected token '${JSON.stringify(token).slice(1, -1)}'`)
    .replace(/\s*in JSON at position \d+.*$/s, '')
    .replace(/\s*after JSON at position \d+.*$/s, ' after the JSON value');
  const pos = /at position (\d+)/.exec(raw);
  let offset = pos ? Number(pos[1]) : jsonErrorOffset(text);
  if (offset === undefined || offset > text.length) return { message };
  // At the end of the input, point just past the last thing written rather than at a trailing blank line.
  if (offset >= text.trimEnd().length) offset = text.trimEnd().length;
  const before = text.slice(0, offset);
  return { message, line: before.split('\n').length, column: offset - before.lastIndexOf('\n') };
}

/** Where `text` stops being JSON (`text.length` if cut short, undefined if valid), by bisection: a prefix holding the bad character fails inside. */
export function jsonErrorOffset(text: string): number | undefined {
  const failsInside = (end: number): boolean => {
    try {
      JSON.parse(text.slice(0, end));
      return false;
    } catch (err) {
      const message = (err as Error).message;
      const at = /at position (\d+)/.exec(message);
      // Node 20 names an unexpected token without its position; a prefix's end is never one.
      return at ? Number(at[1]) < end : message.startsWith('Unexpected token');
    }
  };
  try {
    JSON.parse(text);
    return undefined;
  } catch {
    if (!failsInside(text.length)) return text.length;
  }
  let [good, bad] = [0, text.length]; // failsInside(good) is false, failsInside(bad) true
  while (bad - good > 1) {
    const mid = (good + bad) >>> 1;
    if (failsInside(mid)) bad = mid;
    else good = mid;
  }
  return good;
}
