/**
 * drizzle-kit configuration: `npm run db:generate` turns src/db/schema.ts into SQL migrations in migrations/,
 * which openDatabase() applies on open. Paths are relative to the repository root (where npm runs scripts).
 */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './src/db/schema.ts',
  out: './migrations',
  strict: true,
  verbose: true,
});
