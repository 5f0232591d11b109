import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARCHITECTURE_DOC, withGeneratedRegions } from './architecture-tables.js';

/** `npm run docs:generate`: rewrites the generated regions of docs/architecture.md from the code. */
const root = fileURLToPath(new URL('..', import.meta.url));
const path = join(root, ARCHITECTURE_DOC);
const current = readFileSync(path, 'utf8');
const generated = withGeneratedRegions(root, current);
if (generated === current) {
  console.log(`${ARCHITECTURE_DOC}: up to date`);
} else {
  writeFileSync(path, generated);
  console.log(`${ARCHITECTURE_DOC}: generated regions rewritten`);
}
