#!/usr/bin/env node
// The executable run from the sources (tests, `npm run netingest`): registers tsx's loader so that Node runs
// the TypeScript, then starts the same entry as the package's dist/bin.js.
import { register } from 'tsx/esm/api';

register();
await import('./bin.ts');
