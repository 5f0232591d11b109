import { z } from 'zod';
import { ErrorCode } from './errors.js';

/** RFC 9457 problem details as documented in OpenAPI for every error response. */
export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    // An extension's refusal carries a code of its own (docs/extensions.md), so besides the
    // platform's codes any SCREAMING_SNAKE code may come.
    code: z.union([
      z.enum(Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]]),
      z.string().regex(/^[A-Z][A-Z0-9_]*$/),
    ]),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .catchall(z.unknown())
  .meta({ id: 'Problem', description: 'RFC 9457 problem details (application/problem+json).' });

/** The media type of every error answer (RFC 9457). */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

export const errorDescriptions: Record<number, string> = {
  400: 'Malformed request (for example invalid JSON).',
  401: 'Missing, malformed, expired or wrongly signed credentials.',
  403: 'Forbidden by a block, a role or a privacy setting.',
  404: 'No such resource.',
  409: 'Duplicate, state conflict or stale revision.',
  413: 'Body over the size limit.',
  414: 'Request URL over the size limit.',
  415: 'Unsupported content type.',
  422: 'Validation failed; `errors` lists the fields.',
  428: 'A precondition header (If-Match or If-None-Match) is required.',
  429: 'Rate limited; see the Retry-After header.',
  431: 'Request header fields over the size limit.',
  503: 'A dependency is unavailable; see the Retry-After header.',
};

/**
 * Response entries for the error statuses a route can produce besides those the document derives
 * for every route (src/platform/openapi.ts). Usage: `response: { 200: okSchema, ...errorResponses(404, 409) }`.
 */
export function errorResponses(...statuses: number[]) {
  const entries: Record<number, typeof problemSchema> = {};
  for (const status of statuses) entries[status] = describedProblem(status);
  return entries;
}

/** One schema object per status, so the serializer compiled for it serves every route (http.ts). */
function describedProblem(status: number): typeof problemSchema {
  let schema = describedProblems.get(status);
  if (!schema) {
    schema = problemSchema.describe(errorDescriptions[status] ?? 'Error.');
    describedProblems.set(status, schema);
  }
  return schema;
}
const describedProblems = new Map<number, typeof problemSchema>();

/**
 * The answers an operation with hooks may give besides its own (docs/extensions.md): a hook's
 * refusal with any 4xx status, its failure (500) and its timeout (503).
 */
export function hookedResponses() {
  return { ...errorResponses(500, 503), '4xx': hookRefusalProblem };
}
// One schema object, as for the statuses above: every hooked route shares its compiled serializer.
const hookRefusalProblem = problemSchema.describe("A hook's refusal, or any of the operation's own.");
