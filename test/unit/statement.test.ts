/**
 * One statement, both engines' texts: placeholders and dialect pieces are put in from the template's slots, so
 * PostgreSQL's `$n` follow the slots' order and a `?` or `@` inside a literal is left alone (nothing is rewritten).
 */
import { describe, expect, it } from 'vitest';
import { codePointOrder, fragment, groupConcat, named, param, paramList, perEngine, pgValues, sql } from '../../src/statement.ts';

describe('sql``', () => {
  it('numbers positional parameters for PostgreSQL in slot order, `?` for SQLite', () => {
    const s = sql`SELECT a FROM t WHERE b = ${param} AND c IN (${paramList(3)}) AND d = '?'`;
    expect(s.sqlite).toBe(`SELECT a FROM t WHERE b = ? AND c IN (?, ?, ?) AND d = '?'`);
    expect(s.postgres).toBe(`SELECT a FROM t WHERE b = $1 AND c IN ($2, $3, $4) AND d = '?'`);
    expect(pgValues(s, [1, 2, 3, 4])).toEqual([1, 2, 3, 4]);
  });

  it('gives a named parameter one number however often it is used, and takes values by name', () => {
    const s = sql`SELECT 1 WHERE x = ${named('input')} AND y = ${named('pages')} AND z = ${named('input')} AND e = 'a@b'`;
    expect(s.sqlite).toBe(`SELECT 1 WHERE x = @input AND y = @pages AND z = @input AND e = 'a@b'`);
    expect(s.postgres).toBe(`SELECT 1 WHERE x = $1 AND y = $2 AND z = $1 AND e = 'a@b'`);
    expect(pgValues(s, { pages: 2, input: 'k', unused: 0 })).toEqual(['k', 2]);
  });

  it('puts in each engine its own spelling: code-point order, group_concat, a whole statement', () => {
    const s = sql`SELECT ${groupConcat('v', "; '", 'position')} FROM t ORDER BY ${codePointOrder('u')}, ${fragment(['w = ', param])}`;
    expect(s.sqlite).toBe(`SELECT group_concat(v, '; ''' ORDER BY position) FROM t ORDER BY u, w = ?`);
    expect(s.postgres).toBe(`SELECT string_agg(v, '; ''' ORDER BY position) FROM t ORDER BY u COLLATE "C", w = $1`);
    expect(perEngine({ sqlite: 'SELECT 1', postgres: 'SELECT 2' })).toMatchObject({ sqlite: 'SELECT 1', postgres: 'SELECT 2', names: null });
  });

  it('refuses positional and named parameters in one statement', () => {
    expect(() => sql`SELECT ${param}, ${named('a')}`).toThrow(/positional or named/);
  });
});
