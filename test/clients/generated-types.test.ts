import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleFile, generatedTypesFile, openapiTypes } from '../../packages/client/openapi-types.js';
import { PASSWORD, uniqueUsername } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';

/**
 * The second client path: openapi-typescript types of the current document, and openapi-fetch
 * typed by them. The example must type-check against freshly generated types, and run.
 */

/** Type errors of `files` as the compiler reports them, one line each. */
function typeErrors(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: [],
    skipLibCheck: true,
  });
  return ts
    .getPreEmitDiagnostics(program)
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
}

describe('the generated openapi-typescript client', () => {
  const app = useTestApp();

  beforeAll(async () => {
    const document = (await app().http.inject({ method: 'GET', url: '/openapi.json' })).json();
    await writeFile(generatedTypesFile, await openapiTypes(document));
  }, 120_000);

  it('type-checks the example against types generated from the current document', () => {
    expect(typeErrors([exampleFile])).toEqual([]);
  }, 60_000);

  it('refuses, at compile time, a call the document does not describe', async () => {
    const misuse = join(generatedTypesFile, '../misuse.ts');
    await writeFile(
      misuse,
      `import createClient from 'openapi-fetch';\nimport type { paths } from './openapi.js';\n` +
        `await createClient<paths>({}).POST('/api/auth/login', { body: { username: 'a' } });\n`,
    );
    const errors = typeErrors([misuse]);
    expect(errors.join('\n')).toMatch(/password/);
  }, 60_000);

  it('registers, logs in and reads the user back through openapi-fetch', async () => {
    // Imported once its types exist: a static import would have the project's type-check need them.
    const { registerLogInAndLookUp } = (await import(pathToFileURL(exampleFile).href)) as {
      registerLogInAndLookUp(baseUrl: string, username: string, password: string): Promise<unknown>;
    };
    const username = uniqueUsername('gen');
    const user = await registerLogInAndLookUp(app().httpUrl, username, PASSWORD);
    expect(user).toMatchObject({ username });
  });
});
