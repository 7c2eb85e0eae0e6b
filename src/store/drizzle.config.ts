/**
 * drizzle-kit configuration: `npm run db:generate` turns src/store/schema.ts into SQL migrations in migrations/,
 * which openDatabase() applies on open. Paths are relative to the repository root (where npm runs scripts).
 */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './src/store/schema.ts',
  out: './migrations',
  strict: true,
  verbose: true,
});
