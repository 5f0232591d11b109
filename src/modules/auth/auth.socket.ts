import { ClientFrameType } from '../../../protocol/frames.js';
import type { AppServices } from '../../app.js';

/**
 * The gateway's auth frame `{t: 'auth', id, d: {token}}`: the same verifier as the REST hook, so
 * a token the API refuses is refused here too. The ack carries who the connection now speaks for.
 */
export function registerAuthFrames(services: AppServices) {
  const { gateway, tokens } = services;
  gateway.handle(
    ClientFrameType.AUTH,
    async (connection, { token }) => {
      const user = await tokens.verify(token, { remember: false });
      await gateway.authenticate(connection, user);
      return { user_id: user.id, roles: user.roles };
    },
    { requiresAuth: false },
  );
}
