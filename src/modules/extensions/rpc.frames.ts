import { rpcCall } from '../../../protocol/extensions.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { type OperationBinding, serve } from '../../platform/operations.js';
import type { ExtensionsService, RpcAnswer } from './extensions.service.js';

/** The `rpc` frame: the socket's twin of POST /api/rpc/{name}, answering `{result}` as its ack. */
export function rpcFrames(extensions: ExtensionsService): OperationBinding[] {
  return [
    serve(rpcCall, (ctx, { name, input }) => {
      // The frame is served to users' sockets only, whatever the rpc's auth.
      if (ctx.service)
        throw new AppError(ErrorCode.FORBIDDEN, "A game server's socket may not send rpc frames.");
      if (!ctx.user) throw new AppError(ErrorCode.UNAUTHENTICATED, 'Send an auth frame first.');
      // A synchronous answer is acked synchronously: no promise for the dispatch to track.
      const answer = extensions.call(ctx, 'socket', name, input);
      return answer instanceof Promise ? answer.then(resultOf) : resultOf(answer);
    }),
  ];
}

const resultOf = ({ json }: RpcAnswer) => ({ result: JSON.parse(json) as unknown });
