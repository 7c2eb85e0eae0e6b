// `npm run test:pg`: only test/pg/ (see test/vitest.config.ts).
export { pgConfig as default } from './vitest.config.ts';
