/**
 * drizzle-kit configuration: `npm run db:generate` turns the schema into SQL migrations, once per engine: migrations/
 * for SQLite, and with NETINGEST_DIALECT=postgresql migrations/postgres/, each applied on opening a dataset of its
 * engine (each journal lists only its own folder's files). Paths are relative to the repository root.
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
