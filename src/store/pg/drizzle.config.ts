/**
 * drizzle-kit configuration for PostgreSQL: `npm run db:generate:pg` turns src/store/pg/schema.ts into SQL
 * migrations in migrations/postgres/, which openPgStore() applies on open. SQLite's stay in migrations/ (its
 * journal lists only its own files, so neither generator nor migrator reads the other's folder).
 */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: ['./src/store/pg/schema.ts', './src/store/pg/coordination/tables.ts'],
  out: './migrations/postgres',
  strict: true,
  verbose: true,
});
