#!/usr/bin/env node
// Entry point of `netingest` (dist/bin.js). Its first statement catches the stop signals, before node reads the rest of
// the CLI (start.ts and its imports: ~0.3 s on a busy machine, when a SIGTERM used to die of node's default, exit 143).
// It imports nothing else that esbuild could make a chunk loaded ahead of it (stop-signals.ts is bundled into it).
import { catchStopSignals } from './stop-signals.ts';

catchStopSignals(process.stderr);
await import('./start.ts');
