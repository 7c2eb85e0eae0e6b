// `npm run test:package`: only test/package/ (see test/vitest.config.ts).
export { packageConfig as default } from './vitest.config.ts';
