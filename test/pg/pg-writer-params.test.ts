/**
 * A group commit whose rows of one table need more values than one PostgreSQL statement binds (65,535: the wire
 * protocol counts them in 16 bits) is written whole, in several statements: four similar-companies pages of
 * 1,000 companies (num's most) are 76,000 values for `companies` alone. In one statement the group failed and
 * the run stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { createPgGroupCommit } from '../../src/store/pg/pg-group-commit.ts';
import { MAX_PARAMS, valuesStatements } from '../../src/store/pg/pg-pipeline.ts';
import { withPgClient } from '../../src/store/pg/transaction.ts';
import { writeAsRunWriter } from './run-writer-group.ts';
import type { OutcomeOp } from '../../src/store/outcome-ops.ts';
import { successOp } from '../support/store-helpers.ts';
import { company, similarRequest, similarResponse } from '../support/db-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const AT = '2026-11-02T08:00:00.000Z';
const PAGES = 4;
const PER_PAGE = 1000;

describe('valuesStatements', () => {
  it('splits rows at the parameter limit, in order, each statement its own placeholders from $1', () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => [i, `r${i}`, null, i * 2, 'x', 'y', 'z']);
    const statements = valuesStatements('INSERT INTO t (a, b, c, d, e, f, g)', rows, ' ON CONFLICT DO NOTHING');
    const perStatement = Math.floor(MAX_PARAMS / 7);
    expect(statements.map((s) => s.values.length / 7)).toEqual([perStatement, 10_000 - perStatement]);
    expect(statements.flatMap((s) => s.values)).toEqual(rows.flat());
    for (const s of statements) {
      expect(s.text.startsWith('INSERT INTO t (a, b, c, d, e, f, g) VALUES ($1, $2, $3, $4, $5, $6, $7), ($8,')).toBe(true);
      expect(s.text.endsWith(`$${s.values.length}) ON CONFLICT DO NOTHING`)).toBe(true);
    }
    expect(valuesStatements('INSERT INTO t (a)', [])).toEqual([]);
  });
});

describe.skipIf(!pgClusterUrl)(`a group past the parameter limit${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let store: PgStore;

  beforeAll(async () => {
    store = await openPgStore(await newMigratedPgDatabase('writer-params'));
    for (let id = 1; id <= PAGES; id++) {
      await store.pool.query(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, attempts, created_at, updated_at)
        VALUES ($1, 'j', 'similar-companies', 'k', $2, '{}', 'pending', 0, $3, $3)`, [id, id, AT]);
    }
  });
  afterAll(async () => {
    await store?.close();
  });

  it('writes every row of four pages of 1,000 companies in one group', { timeout: 120_000 }, async () => {
    const ops: OutcomeOp[] = Array.from({ length: PAGES }, (_, p): OutcomeOp => {
      const taskId = p + 1;
      return successOp({
        taskId, request: similarRequest(taskId, PER_PAGE), response: similarResponse(Array.from({ length: PER_PAGE }, (_, i) => company(p * PER_PAGE + i)), taskId, PER_PAGE), at: AT,
        call: { runId: 1, taskId, operation: 'similar-companies', method: 'POST', path: '/s', status: 200, errorCode: null, latencyMs: 1, totalCredits: 1e6, creditsUsed: taskId, creditsRemaining: 1e6 - taskId, at: AT },
      });
    });
    await withPgClient(store.pool, (client) => writeAsRunWriter(createPgGroupCommit(1), client, ops));
    const count = async (table: string) => (await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
    expect(await count('companies')).toBe(PAGES * PER_PAGE);
    expect(await count('company_locations')).toBe(2 * PAGES * PER_PAGE);
    expect(await count('similar_companies')).toBe(PAGES * PER_PAGE);
    expect((await store.pool.query(`SELECT DISTINCT status FROM tasks`)).rows).toEqual([{ status: 'done' }]);
  });
});
