/**
 * drizzle-kit configuration: `npm run db:generate` turns the schema into the SQL migrations applied on opening a dataset,
 * once per engine: migrations/ for SQLite, migrations/postgres/ with NETINGEST_DIALECT=postgresql (paths from the root).
 */
import { defineConfig } from 'drizzle-kit';

const postgres = process.env['NETINGEST_DIALECT'] === 'postgresql';

export default defineConfig({
  dialect: postgres ? 'postgresql' : 'sqlite',
  schema: postgres ? ['./src/store/pg/schema.ts', './src/store/pg/coordination/tables.ts'] : './src/store/schema.ts',
  out: postgres ? './migrations/postgres' : './migrations',
  strict: true,
  verbose: true,
});
