import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';

/** One error the compiler found in a module: in which file, where (1-based, in characters) and what. */
export interface CompileError {
  /** The file as the compiler names it (an absolute path). */
  file: string;
  line?: number;
  column?: number;
  /** What is wrong, with the language named: `invalid TypeScript: Expected identifier but found ","`. */
  message: string;
}

const PREAMBLE = /^Transform failed with \d+ errors?:\n/;
const LOCATED = /^(.+):(\d+):(\d+): ERROR: (.*)$/;

/**
 * The errors of a module that did not compile, else undefined. tsx deletes esbuild's structured `errors`, so they are
 * read back from the message's `file:line:column: ERROR:` lines (byte columns).
 */
export async function describeCompileError(err: unknown, moduleFile: string): Promise<CompileError[] | undefined> {
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
