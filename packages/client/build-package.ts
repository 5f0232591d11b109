import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';

/**
 * Builds @atrium/client from protocol/: the package is the protocol's client side, compiled, so
 * the server and its clients share one contract and cannot drift apart. Used by `build.ts`
 * (`npm run build:client`) and by the tests, which build into a directory of their own.
 */

export const packageDir = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(packageDir, '../..');
const run = promisify(execFile);

/** The package's exports (see package.json), by output name. */
export const entryPoints = {
  index: join(repoRoot, 'protocol/index.ts'),
  'chunk-codec': join(repoRoot, 'protocol/chunk-codec.ts'),
};

export interface PackageJson {
  name: string;
  version: string;
  dependencies: Record<string, string>;
}

export async function readPackageJson(dir = packageDir): Promise<PackageJson> {
  return JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as PackageJson;
}

/**
 * The ESM bundle of each entry point into `outDir`, with the package's dependencies left as
 * imports. The neutral platform resolves no Node builtin, so a `node:` import anywhere in
 * protocol/ fails the build instead of shipping a package browsers cannot load.
 */
export async function bundlePackage(outDir: string): Promise<Metafile> {
  const { dependencies } = await readPackageJson();
  const result = await build({
    entryPoints,
    outdir: outDir,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    external: Object.keys(dependencies),
    metafile: true,
    logLevel: 'silent',
  });
  return result.metafile;
}

/** The type declarations of the entry points into `outDir`, by tsc with DOM types and no Node types. */
export async function emitDeclarations(outDir: string): Promise<void> {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    await run(process.execPath, [tsc, '-p', join(packageDir, 'tsconfig.json'), '--outDir', outDir], {
      cwd: repoRoot,
    });
  } catch (error) {
    const { stdout = '' } = error as { stdout?: string };
    throw new Error(`tsc could not emit the declarations of @atrium/client:\n${stdout}`);
  }
}

/** The modules a bundle imports at run time: what an installer must provide. */
export function importsOf(metafile: Metafile): string[] {
  const imports = Object.values(metafile.outputs).flatMap((output) => output.imports.map(({ path }) => path));
  return [...new Set(imports)].sort();
}

export interface Size {
  raw: number;
  gzip: number;
}

export function sizeOf(bytes: Uint8Array): Size {
  return { raw: bytes.byteLength, gzip: gzipSync(bytes, { level: 9 }).byteLength };
}

/**
 * What the main entry point costs a web page: bundled for browsers with zod and @msgpack/msgpack,
 * minified. Tree-shaking keeps only what the entry point reaches.
 */
export async function browserBundleSize(): Promise<Size> {
  const result = await build({
    entryPoints: [entryPoints.index],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error('esbuild produced no browser bundle.');
  return sizeOf(output.contents);
}
