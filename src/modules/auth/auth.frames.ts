import { authenticate } from '../../../protocol/auth.js';
import { isGameServerToken } from '../../platform/auth/game-server-auth.js';
import { gameServerPrincipal, userPrincipal } from '../../platform/auth/principal.js';
import type { Platform } from '../../platform/module.js';
import { type OperationBinding, serve } from '../../platform/operations.js';

/** The auth frame, which only the socket has: it authenticates the connection itself. */
export function authFrames({
  tokens,
  gateway,
  gameServerCredentials,
}: Pick<Platform, 'tokens' | 'gateway' | 'gameServerCredentials'>): OperationBinding[] {
  return [
    // The same verifier as the REST hook, so a token the API refuses is refused here too.
    serve(authenticate, async (_ctx, { token, recover }, connection) => {
      // A game server's token: the connection may follow its world's chunk stream.
      if (isGameServerToken(token)) {
        const server = await gameServerCredentials.verify(token);
        await gateway.authenticate(connection, gameServerPrincipal(server));
        return { server_id: server.serverId, world_id: server.worldId };
      }
      const user = await tokens.verify(token, { remember: false });
      const caughtUp = await gateway.authenticate(connection, userPrincipal(user), recover);
      return { user_id: user.id, roles: user.roles, ...caughtUp };
    }),
  ];
}
