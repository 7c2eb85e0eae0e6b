import { mergeConfig } from 'vitest/config';
import suite from './vitest.config.ts';

/** `npm test` with each file's CPU written down (test/measure/cpu-per-file.ts); give it paths to measure fewer. */
export default mergeConfig(suite, { test: { setupFiles: ['test/measure/cpu-per-file.ts'] } });
