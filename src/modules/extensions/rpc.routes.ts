import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { rpcCall } from '../../../protocol/extensions.js';
import type { PlainRestTwin } from '../../../protocol/operation.js';
import type { AccessTokens } from '../../platform/auth/access-tokens.js';
import { bearerToken } from '../../platform/auth/http-auth.js';
import type { Caller, Ctx } from '../../platform/context.js';
import type { HttpServer } from '../../platform/http.js';
import { errorResponses, hookedResponses } from '../../platform/http-schemas.js';
import type { ExtensionsService, RpcAnswer, RpcPath } from './extensions.service.js';
import type { Rpc } from './registry.js';

const resultSchema = z.object({ result: z.unknown() });
const { path: API_RPC, operationId } = rpcCall.restRoute as PlainRestTwin;
const INTERNAL_RPC = '/internal/rpc/:name';

// An rpc validates its input itself, the same way on both transports (rpc calls' 422 name `body.<field>`).
const noFastifyValidation = () => (value: unknown) => ({ value });

/**
 * The rpcs' REST paths: one route per loaded rpc (documented as `rpc.<name>` with its input
 * schema), and one per path for every other name, answering 404 before any auth or input check.
 */
export function rpcRoutes(deps: {
  rpcs: readonly Rpc[];
  extensions: ExtensionsService;
  tokens: AccessTokens;
  ctxOf: (caller: Caller) => Ctx;
}) {
  const { extensions, tokens, ctxOf } = deps;
  const answer = (reply: FastifyReply, { json }: RpcAnswer) =>
    reply.type('application/json; charset=utf-8').send(`{"result":${json}}`);
  const serve =
    (path: RpcPath, name: (request: FastifyRequest) => string) =>
    async (request: FastifyRequest, reply: FastifyReply) =>
      answer(reply, await extensions.call(ctxOf(request), path, name(request), request.body));

  return (http: HttpServer) => {
    for (const rpc of deps.rpcs) {
      const path: RpcPath = rpc.auth === 'server' ? 'internal' : 'api';
      http.route({
        method: 'POST',
        url: `${path === 'internal' ? '/internal' : '/api'}/rpc/${rpc.name}`,
        config: { public: rpc.auth === 'public', serviceToken: rpc.auth === 'server' },
        schema: {
          operationId: `rpc.${rpc.name}`,
          tags: ['rpc'],
          summary: `The rpc ${rpc.name} of the extension ${rpc.extension}.`,
          ...(rpc.input ? { body: rpc.input } : {}),
          // An rpc may refuse with any 4xx of its own, as a hook may.
          response: { 200: resultSchema, ...errorResponses(401, 404, 422), ...hookedResponses() },
        },
        validatorCompiler: noFastifyValidation,
        // A public rpc sees a caller who sent a valid token; a token that does not verify is refused.
        ...(rpc.auth === 'public' ? { preHandler: optionalUser(tokens) } : {}),
        handler: serve(path, () => rpc.name),
      });
    }
    for (const [url, path, documented] of [
      [API_RPC, 'api', true],
      [INTERNAL_RPC, 'internal', false],
    ] as const) {
      http.route({
        method: 'POST',
        url,
        config: { public: true },
        schema: {
          ...(documented ? { operationId, tags: ['rpc'], summary: rpcCall.summary } : { hide: true }),
          params: z.object({ name: z.string() }),
          response: { 200: resultSchema, ...errorResponses(404) },
        },
        validatorCompiler: noFastifyValidation,
        handler: serve(path, (request) => (request.params as { name: string }).name),
      });
    }
  };
}

/** Sets `request.user` when the request carries a bearer token, which must then verify. */
function optionalUser(tokens: AccessTokens) {
  return async (request: FastifyRequest) => {
    const token = bearerToken(request.headers.authorization);
    if (token) request.user = await tokens.verify(token);
  };
}
