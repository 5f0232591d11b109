import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { operation } from '../../protocol/operation.js';

/**
 * `rest.optionalBody`: a POST whose body may be left out (read as `{}`), which only makes sense
 * when every body field is optional. The HTTP side is tested through the join of a world
 * (test/gameservers/instance-access.test.ts) and the OpenAPI document (openapi-document.test.ts).
 */
describe('an operation declaring an optional body', () => {
  const declare = (method: 'POST' | 'GET', request: z.ZodType) => () =>
    operation('probe.optional', {
      tag: 'probe',
      summary: 'A probe.',
      rest: { method, path: '/api/probes/:probe_id', optionalBody: true },
      request,
      response: z.null(),
    });
  const options = z.object({ probe_id: z.string(), mode: z.enum(['a', 'b']).optional() }).strict();

  it('is declared when every field outside the path is optional', () => {
    expect(declare('POST', options)).not.toThrow();
  });

  it('is refused at import time with a required body field, or on a GET, which has no body', () => {
    const required = z.object({ probe_id: z.string(), mode: z.enum(['a', 'b']) }).strict();
    expect(declare('POST', required)).toThrow(/optional body/);
    expect(declare('GET', options)).toThrow(/optional body/);
  });
});
