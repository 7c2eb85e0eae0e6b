// The entry's list of stop signals (stop-signals.ts, bundled into dist/bin.js alone) and the one a command's work
// uses without the entry (signals.ts) are two copies, kept apart so the entry loads no chunk first: they must agree.
import { describe, expect, it } from 'vitest';
import { STOP_SIGNALS as caughtByTheEntry } from '../../src/cli/stop-signals.ts';
import { STOP_SIGNALS as caughtByTheWork } from '../../src/cli/signals.ts';

describe('stop signals', () => {
  it('are the same three for the entry and for a command run without it', () => {
    expect(caughtByTheWork).toEqual(caughtByTheEntry);
    expect([...caughtByTheEntry].sort()).toEqual(['SIGHUP', 'SIGINT', 'SIGTERM']);
  });
});
