import { rpcCall } from '../../../protocol/extensions.js';
import { type OperationBinding, serve } from '../../platform/operations.js';
import type { ExtensionsService } from './extensions.service.js';

/** The `rpc` frame: the socket's twin of POST /api/rpc/{name}, answering `{result}` as its ack. */
export function rpcFrames(extensions: ExtensionsService): OperationBinding[] {
  return [
    serve(rpcCall, async (ctx, { name, input }) => {
      const { json } = await extensions.call(ctx, 'socket', name, input);
      return { result: JSON.parse(json) as unknown };
    }),
  ];
}
