/** Where netingest's own files (package.json, migrations/, jobs/, data/) are, walking up: this module is one down in src/, at dist/'s top. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package.json fields netingest reads at run time. */
export interface PackageJson {
  name: string;
  version: string;
}

export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

export function readPackageJson(): PackageJson {
  return JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as PackageJson;
}

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (nameAt(dir) === 'netingest') return dir;
    if (dirname(dir) === dir) throw new Error(`netingest: no package.json of netingest above ${from}`);
  }
}

function nameAt(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Partial<PackageJson>).name;
  } catch {
    return undefined;
  }
}
