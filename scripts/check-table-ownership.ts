import { fileURLToPath } from 'node:url';
import { checkTableOwnership } from './table-ownership.js';

/** `npm run lint`'s table-ownership step: prints each problem and fails when there is one. */
const root = fileURLToPath(new URL('..', import.meta.url));
const problems = checkTableOwnership(root);
for (const { file, message } of problems) console.error(`${file}: ${message}`);
if (problems.length > 0) {
  console.error(`table ownership: ${problems.length} problem(s), see docs/modules.md`);
  process.exit(1);
}
console.log('table ownership: every table has one owner, and no module touches the tables of another');
