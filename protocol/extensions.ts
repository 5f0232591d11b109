import { z } from 'zod';
import { operation } from './operation.js';

/**
 * Server extensions' RPCs (docs/extensions.md): one frame and one REST path carry every rpc a
 * loaded extension registered, by name. The API document also lists each loaded rpc as its own
 * operation, `rpc.<name>`, with its input schema.
 */

/** The name an extension registers an rpc under. */
export const RPC_NAME = /^[a-z0-9_.-]{1,64}$/;

export const rpcCall = operation('rpc', {
  tag: 'rpc',
  summary:
    "Calls a server extension's rpc by name with its input; 404 for a name no loaded extension serves on this path. Each loaded rpc is also documented as rpc.<name>.",
  frame: true,
  restRoute: { method: 'POST', path: '/api/rpc/:name', operationId: 'rpc' },
  // Each rpc declares its own auth, checked after its name: a name no rpc has is 404 before any
  // auth. The frame still needs a user's socket (docs/extensions.md).
  public: true,
  request: z
    .object({
      // Any text: a name that names no rpc answers 404, before the input is looked at.
      name: z.string().max(200),
      input: z.unknown().optional(),
    })
    .strict(),
  response: z.object({ result: z.unknown() }).meta({ id: 'RpcResult' }),
  errors: [401, 404, 422, 500, 503],
});

export const extensionOperations = [rpcCall] as const;
