import { afterEach } from 'vitest';
import { printWarningsOfOpenApps } from './app-warnings.js';

// A setup file (vitest.config.ts): after each failed test, what the open test apps logged at warn.
afterEach(({ task }) => {
  if (task.result?.state === 'fail') printWarningsOfOpenApps(task.name);
});
