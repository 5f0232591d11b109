import { writeFile } from 'node:fs/promises';
import { generatedTypesFile, openapiTypes, serviceDocument } from './openapi-types.js';

/** `npm run generate:openapi-types`: regenerates packages/client/generated/openapi.d.ts. */

console.log('Reading the service OpenAPI document (atrium openapi)');
const document = await serviceDocument();
console.log('Generating types with openapi-typescript');
await writeFile(generatedTypesFile, await openapiTypes(document));
console.log(`Wrote ${generatedTypesFile}`);
