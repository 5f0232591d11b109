import { createRequire } from 'node:module';
import type PgModule from 'pg';

/**
 * node-pg, loaded so that it does not load Node's fetch implementation. When it loads, node-pg
 * 8 asks whether it runs on Cloudflare Workers: without a global `navigator` (Node 20 has none)
 * it constructs a `Response`, and the first touch of that global loads undici for the rest of
 * the process, about 2.5 MiB of RSS at rest for nothing (docs/performance.md, "Process memory
 * and start time"). With `Response` hidden for that one synchronous load it takes its Node.js
 * branch, as it does on a Node with `navigator`. Every value import of `pg` in the service goes
 * through this module, so whichever loads first loads it this way.
 */
function loadWithoutFetch(): typeof PgModule {
  const require = createRequire(import.meta.url);
  const response = Object.getOwnPropertyDescriptor(globalThis, 'Response');
  if (!response?.configurable) return require('pg');
  Reflect.deleteProperty(globalThis, 'Response');
  try {
    return require('pg');
  } finally {
    Object.defineProperty(globalThis, 'Response', response);
  }
}

const pg = loadWithoutFetch();
export default pg;
