// Preloaded with `--require` into a service process (test/platform/lean-start.test.ts): when the
// process exits, it writes the paths of the CommonJS modules it loaded, one a line, to the file
// LOADED_MODULES_FILE names. Packages written as CommonJS that ES modules import (MikroORM, knex,
// pg) are in that list too.
const { writeFileSync } = require('node:fs');

process.on('exit', () => {
  writeFileSync(process.env.LOADED_MODULES_FILE, Object.keys(require.cache).join('\n'));
});
