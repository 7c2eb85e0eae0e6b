// `node scripts/pack-manifest.mjs strip|restore`, run by `npm pack` / `npm publish` (prepack, postpack): the
// package.json in the tarball has no `prepare`. The checkout needs it (`npm install` and a git URL install build
// dist/ through it), but the tarball ships dist/ built, and npm lists a tarball's `prepare` among the "install
// scripts not yet covered by allowScripts" it warns about on every install.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const manifest = join(root, 'package.json');
/** The checkout's own package.json while the tarball is made. */
const kept = join(root, 'package.json.unpacked');
/** The scripts that mean nothing once packed: building, and these hooks. */
const CHECKOUT_ONLY = ['prepare', 'prepack', 'postpack'];

function restore() {
  if (existsSync(kept)) renameSync(kept, manifest);
}

const command = process.argv[2];
if (command === 'strip') {
  // A pack that died before its postpack left the checkout's manifest aside: put it back first.
  restore();
  const text = readFileSync(manifest, 'utf8');
  writeFileSync(kept, text);
  const pkg = JSON.parse(text);
  for (const name of CHECKOUT_ONLY) delete pkg.scripts?.[name];
  writeFileSync(manifest, `${JSON.stringify(pkg, null, 2)}\n`);
} else if (command === 'restore') {
  restore();
} else {
  console.error('usage: node scripts/pack-manifest.mjs strip|restore');
  process.exit(2);
}
