/**
 * A stop signal while a command starts, before its work installs its own handling (loading a .ts job, opening the
 * dataset): the process exits 130, as docs/exit-codes.md says of an interrupt, saying so. It used to die of node's
 * default, exit 143 on SIGTERM with nothing said.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeWorkspace, spawnCli, waitFor, type Workspace } from '../support/run-helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('a stop signal while run starts', () => {
  it('exits 130 with a line saying so', { timeout: 60_000 }, async () => {
    const ws: Workspace = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    // A job module that says it is loading, then never gives its definition: the run is held in its start.
    await ws.write('slow.ts', `import { writeFileSync } from 'node:fs';\nwriteFileSync('loading.marker', '');\nexport default new Promise(() => {});\n`);
    const cli = spawnCli(['run', 'slow.ts', '--db', ws.db], { cwd: ws.dir, env: { NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'tok-signal-start-01' } });
    await waitFor(() => existsSync(join(ws.dir, 'loading.marker')) || cli.child.exitCode !== null, 30_000, 'the job module loading');
    cli.child.kill('SIGTERM');
    const result = await cli.done;
    expect(result.signal).toBeNull();
    expect(result.code).toBe(130);
    expect(result.stderr).toBe('netingest: SIGTERM received: stopping at once\n');
  });
});
