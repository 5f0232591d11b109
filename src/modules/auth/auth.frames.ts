import { authenticate } from '../../../protocol/auth.js';
import { servicePrincipal, userPrincipal } from '../../platform/auth/principal.js';
import type { Platform } from '../../platform/module.js';
import { type OperationBinding, serve } from '../../platform/operations.js';

/** The auth frame, which only the socket has: it authenticates the connection itself. */
export function authFrames({
  tokens,
  gateway,
  serviceTokens,
}: Pick<Platform, 'tokens' | 'gateway' | 'serviceTokens'>): OperationBinding[] {
  return [
    // The same verifier as the REST hook, so a token the API refuses is refused here too.
    serve(authenticate, async (_ctx, { token, recover }, connection) => {
      // A game server's token (a service token scoped to its world): the connection may follow
      // its world's chunk stream.
      if (serviceTokens.recognizes(token)) {
        const server = await serviceTokens.verify(token);
        await gateway.authenticate(connection, servicePrincipal(server));
        return { server_id: server.id, world_id: server.scope };
      }
      const user = await tokens.verify(token, { remember: false });
      const caughtUp = await gateway.authenticate(connection, userPrincipal(user), recover);
      return { user_id: user.id, roles: user.roles, ...caughtUp };
    }),
  ];
}
