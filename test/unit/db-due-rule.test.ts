/**
 * The one rule of "is this task due?" (store/ledger.ts), as `plan` reads it (dueState, writing nothing) and as a
 * run reads it (the task planned again, then runnableAfter): for every state a task can be left in, both
 * readers agree, and agree with the rule as the docs state it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { createLedger, type DueState } from '../../src/store/ledger.ts';

const DAY_MS = 86_400_000;
const NOW = Date.parse('2026-06-10T12:00:00.000Z');
const ago = (days: number) => new Date(NOW - days * DAY_MS).toISOString();
/** The cut-off of a job refreshed every 7 days. */
const FRESH_SINCE = ago(7);

interface Case {
  name: string;
  status: string;
  retryable?: number | null;
  completedAt?: string | null;
  /** Planned again with another request text. */
  changed?: boolean;
  /** What the next run does with it, without --refresh and with it. */
  expected: DueState;
  expectedOnRefresh: DueState;
}

const CASES: Case[] = [
  { name: 'pending', status: 'pending', expected: 'due', expectedOnRefresh: 'due' },
  { name: 'deferred', status: 'deferred', expected: 'due', expectedOnRefresh: 'due' },
  { name: 'failed, retryable', status: 'failed', retryable: 1, expected: 'due', expectedOnRefresh: 'due' },
  { name: 'failed for good', status: 'failed', retryable: 0, expected: 'failed', expectedOnRefresh: 'due' },
  { name: 'done yesterday', status: 'done', completedAt: ago(1), expected: 'fresh', expectedOnRefresh: 'due' },
  { name: 'done 10 days ago', status: 'done', completedAt: ago(10), expected: 'due', expectedOnRefresh: 'due' },
  { name: 'done, no time', status: 'done', completedAt: null, expected: 'due', expectedOnRefresh: 'due' },
  { name: 'not found yesterday', status: 'not_found', completedAt: ago(1), expected: 'fresh', expectedOnRefresh: 'due' },
  { name: 'not found 8 days ago', status: 'not_found', completedAt: ago(8), expected: 'due', expectedOnRefresh: 'due' },
  { name: 'done yesterday, request changed', status: 'done', completedAt: ago(1), changed: true, expected: 'due', expectedOnRefresh: 'due' },
  { name: 'failed for good, request changed', status: 'failed', retryable: 0, changed: true, expected: 'due', expectedOnRefresh: 'due' },
];

let dir: string;
let database: Database;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-due-rule-'));
  database = openDatabase(join(dir, 'due.db'));
});
afterEach(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

const request = (i: number, changed = false) => JSON.stringify({ url: `https://network.com/posts/p${i}`, v: changed ? 2 : 1 });

/** Run 1 planned every case; each is then left in its state, as an earlier run would leave it. */
function seed(): void {
  const ledger = createLedger(database);
  const tasks = CASES.map((_, i) => ({ job: 'j', operation: 'post-details', inputKey: `k${i}`, page: 1, requestJson: request(i), inputLine: i + 2 }));
  ledger.insertPlanned(tasks, [], 1, ago(30));
  const leave = database.sqlite.prepare(`UPDATE tasks SET status = ?, retryable = ?, completed_at = ? WHERE input_key = ?`);
  CASES.forEach((c, i) => leave.run(c.status, c.retryable ?? null, c.completedAt ?? null, `k${i}`));
}

/** What plan says of each case (and of a task never planned). */
function planStates(refresh: boolean): DueState[] {
  const ledger = createLedger(database);
  const rule = { job: 'j', freshSince: refresh ? new Date(NOW).toISOString() : FRESH_SINCE, refresh };
  return [...CASES.map((c, i) => ledger.dueState(rule, { inputKey: `k${i}`, page: 1, requestJson: request(i, c.changed) })),
    ledger.dueState(rule, { inputKey: 'never', page: 1, requestJson: request(99) })];
}

/** The cases a run (id 2) works on, once it planned them again. */
function runDue(refresh: boolean): boolean[] {
  const ledger = createLedger(database);
  ledger.insertPlanned(CASES.map((c, i) => ({ job: 'j', operation: 'post-details', inputKey: `k${i}`, page: 1, requestJson: request(i, c.changed), inputLine: i + 2 })), [], 2, new Date(NOW).toISOString());
  const filter = { job: 'j', runId: 2, freshSince: refresh ? new Date(NOW).toISOString() : FRESH_SINCE, refresh };
  const due = new Set(ledger.runnableAfter(filter, 0, 1000).map((t) => t.inputKey));
  return CASES.map((_, i) => due.has(`k${i}`));
}

describe('the due rule', () => {
  for (const refresh of [false, true]) {
    it(`plan and run take every state alike${refresh ? ' under --refresh' : ''}`, () => {
      seed();
      const plan = planStates(refresh);
      expect(plan.at(-1)).toBe('new');
      const expected = CASES.map((c) => (refresh ? c.expectedOnRefresh : c.expected));
      expect(Object.fromEntries(CASES.map((c, i) => [c.name, plan[i]]))).toEqual(Object.fromEntries(CASES.map((c, i) => [c.name, expected[i]])));
      const run = runDue(refresh);
      expect(Object.fromEntries(CASES.map((c, i) => [c.name, run[i]]))).toEqual(Object.fromEntries(CASES.map((c, i) => [c.name, plan[i] === 'due'])));
    });
  }
});
