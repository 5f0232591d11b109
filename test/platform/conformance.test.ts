import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../protocol/operation.js';
import { clientPayloadSchemas, operations } from '../../protocol/operations.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, request } from '../helpers/ws-client.js';

/**
 * The catalogue in protocol/operations.ts against what the running service serves: every
 * operation on the transports it declares, nothing served that the catalogue does not declare,
 * and every operation not declared public closed to anonymous callers on both transports.
 */

interface OpenApiOperation {
  operationId?: string;
  security?: Record<string, string[]>[];
}
interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { securitySchemes?: Record<string, unknown> };
}
interface DocumentedRoute {
  method: string;
  path: string;
  operation: OpenApiOperation;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);
const catalogue: readonly Operation[] = Object.values(operations);
const frameOperations = catalogue.filter((op) => op.frame);
const restOperations = catalogue.filter((op) => op.rest);
const BEARER = [{ bearerAuth: [] }];
const SERVER_TOKEN = [{ serverToken: [] }];
/** Fills every path parameter: a well-formed id that names nothing. */
const SOME_ID = '01a1ffb2-0000-7000-8000-000000000000';

const openApiPath = (fastifyPath: string) => fastifyPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('the operation catalogue against the running service', () => {
  const app = useTestApp();
  let routes: DocumentedRoute[];
  const byOperationId = (id: string) => routes.filter((route) => route.operation.operationId === id);

  beforeAll(async () => {
    const response = await app().http.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json<OpenApiDocument>();
    routes = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([method]) => HTTP_METHODS.has(method))
        .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
    );
  });

  it('has a gateway handler for every frame type of the catalogue, and none for a type outside it', () => {
    const handled = app().gateway.handledTypes();
    expect(new Set(handled).size).toBe(handled.length);
    expect([...handled].sort()).toEqual(Object.keys(clientPayloadSchemas).sort());
  });

  it.each(frameOperations.map((op) => [op.name, op] as const))(
    'serves the frame %s over REST as well (an operation or a plain route), or names why it is socket-only',
    (_name, op) => {
      if (op.socketOnly !== undefined) {
        expect(op.socketOnly.trim()).not.toBe('');
        expect(op.rest).toBeUndefined();
        expect(byOperationId(op.name)).toEqual([]);
        return;
      }
      if (op.restRoute !== undefined) {
        for (const { method, path, operationId } of [op.restRoute].flat()) {
          expect(
            byOperationId(operationId).map((route) => ({ method: route.method, path: route.path })),
          ).toEqual([{ method, path: openApiPath(path) }]);
        }
        return;
      }
      const rest = op.rest as NonNullable<Operation['rest']>;
      expect(byOperationId(op.name).map(({ method, path }) => ({ method, path }))).toEqual([
        { method: rest.method, path: openApiPath(rest.path) },
      ]);
    },
  );

  it.each(restOperations.map((op) => [op.name, op] as const))(
    'documents the REST operation %s once, under its operationId, method and path',
    (_name, op) => {
      const rest = op.rest as NonNullable<Operation['rest']>;
      expect(byOperationId(op.name).map(({ method, path }) => ({ method, path }))).toEqual([
        { method: rest.method, path: openApiPath(rest.path) },
      ]);
    },
  );

  it('gives every documented route a distinct operationId', () => {
    const missing = routes.filter((route) => !route.operation.operationId);
    expect(missing.map(({ method, path }) => `${method} ${path}`)).toEqual([]);
    const ids = routes.map((route) => route.operation.operationId);
    expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
  });

  it('declares security on every documented route: none exactly on public catalogue operations, the server-token scheme exactly on /internal, the bearer scheme otherwise', () => {
    const wrong: string[] = [];
    for (const { method, path, operation } of routes) {
      const declared = catalogue.find((op) => op.name === operation.operationId);
      const { security } = operation;
      // OPTIONS answers the Allow header to anyone, before authentication.
      const acceptable =
        method === 'OPTIONS'
          ? [[]]
          : path.startsWith('/internal/')
            ? [SERVER_TOKEN]
            : declared
              ? [declared.public ? [] : BEARER]
              : // A raw route (probes, key sets) says itself whether it is public.
                [[], BEARER];
      if (!acceptable.some((expected) => JSON.stringify(expected) === JSON.stringify(security))) {
        wrong.push(`${method} ${path} (${operation.operationId}): ${JSON.stringify(security)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('answers every route that is not public 401 UNAUTHENTICATED without a token (HEAD: the status alone)', async () => {
    const secured = routes.filter(({ operation }) => (operation.security ?? []).length > 0);
    expect(secured.length).toBeGreaterThan(0);
    const answers = await Promise.all(
      secured.map(async ({ method, path }) => {
        const response = await app().http.inject({
          method: method as 'GET',
          url: path.replace(/\{[^}]+\}/g, SOME_ID),
        });
        const code =
          method === 'HEAD'
            ? 'UNAUTHENTICATED'
            : response.headers['content-type']?.toString().includes('json')
              ? (response.json() as { code?: string }).code
              : undefined;
        return `${method} ${path}: ${response.statusCode} ${code}`;
      }),
    );
    expect(answers).toEqual(secured.map(({ method, path }) => `${method} ${path}: 401 UNAUTHENTICATED`));
  });

  describe('on a socket that never authenticated', () => {
    const { open, closeAll } = openedSockets(() => app().wsUrl);
    afterAll(() => closeAll());

    it('answers every frame that is not public with an UNAUTHENTICATED error frame', async () => {
      const secured = frameOperations.filter((op) => !op.public);
      expect(secured.length).toBeGreaterThan(0);
      const socket = await open();
      const answers: string[] = [];
      for (const op of secured) {
        const reply = await request(socket, op.name, {});
        answers.push(`${op.name}: ${reply.t} ${reply.code}`);
      }
      expect(answers).toEqual(secured.map((op) => `${op.name}: error UNAUTHENTICATED`));
    });
  });
});
