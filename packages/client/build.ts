import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  browserBundleSize,
  bundlePackage,
  emitDeclarations,
  importsOf,
  packageDir,
  readPackageJson,
  type Size,
  sizeOf,
} from './build-package.js';

/** `npm run build:client`: builds packages/client/dist and prints what it weighs. */

const outDir = join(packageDir, 'dist');
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const show = ({ raw, gzip }: Size) => `${kib(raw)} raw, ${kib(gzip)} gzip`;

const { name, version } = await readPackageJson();
console.log(`Building ${name}@${version} into ${outDir}`);
await rm(outDir, { recursive: true, force: true });

console.log('- bundling protocol/ with esbuild (ESM, neutral platform)');
const metafile = await bundlePackage(outDir);
for (const file of Object.keys(metafile.outputs).sort()) {
  console.log(`    ${file}: ${show(sizeOf(await readFile(file)))}`);
}
console.log(`    imports at run time: ${importsOf(metafile).join(', ')}`);

console.log('- emitting type declarations with tsc');
await emitDeclarations(outDir);

console.log('- measuring a browser bundle of the main entry with zod and @msgpack/msgpack, minified');
console.log(`    ${show(await browserBundleSize())}`);
console.log('Done.');
