// `npm run test:unit`: only test/unit/ (see test/vitest.config.ts).
export { unitConfig as default } from './vitest.config.ts';
