/**
 * The README and docs/ as a user reads them from the installed package: every relative link lands on a file the
 * package ships (package.json "files"), and on a heading of it when it names one; every `*.md` they cite exists.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`)];
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };

/** Whether npm packs `path` (relative to the root): package.json, README and LICENSE always, else an entry of "files". */
function shipped(path: string): boolean {
  if (['package.json', 'README.md', 'LICENSE'].includes(path)) return true;
  return pkg.files.some((entry) => {
    if (!entry.includes('*')) return path === entry || path.startsWith(`${entry}/`);
    const re = new RegExp(`^${entry.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    return re.test(path);
  });
}

/** GitHub's anchor for a heading: lower case, punctuation but `_` and `-` dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*]/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const outside = markdown.replace(/```[\s\S]*?```/g, '');
  return new Set([...outside.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => anchor(m[1]!)));
}

/** The markdown's link targets outside code blocks and code spans: `[text](target)` and `[label]: target`. */
function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const reference = [...prose.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]!);
  return [...inline, ...reference];
}

describe('links in README.md and docs/', () => {
  it.each(DOCS)('%s links only to files the package ships, and to headings they have', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const broken: string[] = [];
    for (const link of linksOf(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
      const [path, fragment] = link.split('#') as [string, string | undefined];
      const target = path === '' ? join(ROOT, doc) : resolve(dirname(join(ROOT, doc)), decodeURIComponent(path));
      const inPackage = relative(ROOT, target).split(sep).join('/');
      if (!target.startsWith(ROOT) || !existsSync(target)) broken.push(`${link}: no such file`);
      else if (!shipped(inPackage)) broken.push(`${link}: ${inPackage} is not in the package (package.json "files")`);
      else if (fragment && statSync(target).isFile() && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(fragment)) {
        broken.push(`${link}: no heading #${fragment} in ${inPackage}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it.each(DOCS)('%s cites only .md files that exist', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8').replace(/https?:\/\/\S+/g, '');
    const missing = [...text.matchAll(/(?<![\w/.-])((?:[\w.-]+\/)*[\w.-]+\.md)\b/g)]
      .map((m) => m[1]!)
      .filter((name) => ![dirname(join(ROOT, doc)), ROOT, join(ROOT, 'docs')].some((dir) => existsSync(join(dir, name))));
    expect([...new Set(missing)]).toEqual([]);
  });
});
