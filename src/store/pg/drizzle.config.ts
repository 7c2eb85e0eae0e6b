/**
 * drizzle-kit config for PostgreSQL: `npm run db:generate:pg` turns schema.ts into migrations/postgres/, which
 * openPgStore() applies. SQLite's stay in migrations/: each journal lists only its own folder's files.
 */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: ['./src/store/pg/schema.ts', './src/store/pg/coordination/tables.ts'],
  out: './migrations/postgres',
  strict: true,
  verbose: true,
});
