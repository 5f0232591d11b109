/**
 * Import rules, checked by `npm run lint` (depcruise). The layout they enforce:
 *
 *   protocol/               the wire contract shared with clients: imports nothing from src/
 *   src/platform/           infrastructure: imports nothing from src/modules/
 *   src/modules/<x>/        one domain; index.ts is the only file other code may import, and
 *                           its *.routes.ts (REST adapters) only index.ts and the other
 *                           *.routes.ts import
 *   src/modules/index.ts    the ordered module list: imports the modules' index.ts files
 *   src/app.ts, main.ts     import modules' index.ts files and src/modules/index.ts
 *   src/config.ts           imports each module's settings (src/modules/<x>/<x>.config.ts) and no more
 *
 * Tests (test/, *.test.ts) and benchmarks (bench/) are exempt from the boundary rules, not from
 * the cycle rule. Type-only imports count everywhere (tsPreCompilationDeps).
 */

/** Files the boundary rules do not apply to. */
const exempt = ['^test/', '^bench/', '\\.test\\.ts$'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles, type-only imports included, are not allowed anywhere.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'platform-not-to-modules',
      severity: 'error',
      comment: 'src/platform is infrastructure: it must not import anything from src/modules.',
      from: { path: '^src/platform/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'protocol-not-to-src',
      severity: 'error',
      comment:
        'protocol/ is the wire contract shared with clients: it must import nothing from src/ ' +
        '(src/modules included), test/, bench/ or migrations/.',
      from: { path: '^protocol/', pathNot: exempt },
      to: { path: '^(src|test|bench|migrations)/' },
    },
    {
      name: 'module-to-other-module-internals',
      severity: 'error',
      comment:
        "A module may import another module only through that module's index.ts " +
        '(src/modules/<y>/index.ts), never its internal files.',
      from: { path: '^src/modules/([^/]+)/' },
      to: {
        path: '^src/modules/[^/]+/',
        pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'],
      },
    },
    {
      name: 'module-internals-from-outside',
      severity: 'error',
      comment:
        'Outside src/modules/<x>/, only its index.ts may be imported (by src/modules/index.ts, ' +
        'src/app.ts and src/main.ts); tests and benchmarks are exempt.',
      from: { pathNot: ['^src/modules/[^/]+/', '^src/config\\.ts$', ...exempt] },
      to: {
        path: '^src/modules/[^/]+/',
        pathNot: '^src/modules/[^/]+/index\\.ts$',
      },
    },
    {
      name: 'config-only-to-module-settings',
      severity: 'error',
      comment:
        "src/config.ts assembles the Config from each module's settings: it may import a module's " +
        '<domain>.config.ts and nothing else of src/modules (those files import only packages and ' +
        'src/platform/config-fields.ts, so Config stays free of cycles).',
      from: { path: '^src/config\\.ts$' },
      to: { path: '^src/modules/', pathNot: '^src/modules/[^/]+/[^/]+\\.config\\.ts$' },
    },
    {
      name: 'only-entry-points-to-modules',
      severity: 'error',
      comment:
        'Outside src/modules, only src/app.ts and src/main.ts may import from src/modules, and ' +
        "src/config.ts the modules' settings (platform, protocol and migrations stay independent of the domains).",
      from: {
        path: '^(src|protocol|migrations)/',
        pathNot: ['^src/modules/', '^src/(app|main|config)\\.ts$', ...exempt],
      },
      to: { path: '^src/modules/' },
    },
    {
      name: 'module-allowed-imports',
      severity: 'error',
      comment:
        "A module's files import only files of src/modules (the rules above narrow that to its own " +
        "files and other modules' index.ts), src/platform and protocol, plus packages.",
      from: { path: '^src/modules/[^/]+/' },
      to: { dependencyTypes: ['local'], pathNot: ['^src/modules/', '^src/platform/', '^protocol/'] },
    },
    {
      name: 'rest-files-only-from-index',
      severity: 'error',
      comment:
        "A module's *.routes.ts files are its REST adapters: only its index.ts (which registers the " +
        "routes) and its other *.routes.ts files (which share REST's wording of refusals) import " +
        "them, so a frame, a service or any other file on the socket's path never goes through a " +
        'REST file.',
      from: { path: '^src/', pathNot: ['^src/modules/[^/]+/index\\.ts$', '\\.routes\\.ts$', ...exempt] },
      to: { path: '\\.routes\\.ts$' },
    },
    {
      name: 'no-orm-in-modules',
      severity: 'error',
      comment:
        'Modules import no MikroORM (@mikro-orm/*): their statements are SQL in their repositories ' +
        '(*.repository.ts), run with executeBound on the opaque data handle (src/platform/db.ts), and ' +
        'MikroORM only migrates (src/platform/orm-config.ts, loaded by migrate.ts; docs/modules.md, "Data access").',
      from: { path: '^src/modules/' },
      to: { path: '(^|/)node_modules/@mikro-orm/' },
    },
    {
      name: 'module-not-to-module-list',
      severity: 'error',
      comment: 'A module must not import src/modules/index.ts (the list of all modules).',
      from: { path: '^src/modules/[^/]+/' },
      to: { path: '^src/modules/index\\.ts$' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment:
        'An import dependency-cruiser cannot resolve would escape every rule above (and is ' +
        'probably a typo or a missing package).',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'runtime-not-to-dev-dependency',
      severity: 'error',
      comment:
        'The image keeps only "dependencies" (npm prune --omit=dev), so code that ships must not ' +
        'import a devDependency at run time (type-only imports are erased and allowed).',
      from: { path: '^(src|protocol|migrations)/', pathNot: exempt },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports (import type, import('x').T) are dependencies too, for the cycle rule above all.
    tsPreCompilationDeps: true,
    // NodeNext: `./foo.js` specifiers resolve to `./foo.ts` through the project's tsconfig.
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
    },
    skipAnalysisNotInRules: true,
    cache: false,
    reporterOptions: { text: { highlightFocused: true } },
  },
};
