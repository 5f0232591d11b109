// Preloaded with `--require` into a service process (test/platform/lean-start.test.ts): when the
// process exits, it writes the paths of the CommonJS modules it loaded, one a line, to the file
// LOADED_MODULES_FILE names. Packages written as CommonJS that ES modules import (MikroORM, knex,
// pg) are in that list too, and so are Node's own modules, as `node:<name>` (internal ones
// included: `node:internal/deps/undici/undici` is Node's fetch implementation).
const { writeFileSync } = require('node:fs');

process.on('exit', () => {
  const builtins = process.moduleLoadList
    .filter((entry) => entry.startsWith('NativeModule '))
    .map((entry) => `node:${entry.slice('NativeModule '.length)}`);
  writeFileSync(process.env.LOADED_MODULES_FILE, [...Object.keys(require.cache), ...builtins].join('\n'));
});
