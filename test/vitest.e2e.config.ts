// `npm run test:e2e`: only test/e2e/ (see test/vitest.config.ts).
export { e2eConfig as default } from './vitest.config.ts';
