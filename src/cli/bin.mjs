#!/usr/bin/env node
// Entry point of the `netingest` executable. The sources are TypeScript run through tsx's loader, so a
// fresh clone works right after `npm install` with no build step (job files may be .ts as well).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
process.exitCode = await main(process.argv.slice(2));
