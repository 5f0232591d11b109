import { authFrameSchema } from '../../../protocol/auth.js';
import type { AppServices } from '../../app.js';
import { AppError, ErrorCode } from '../../platform/errors.js';

/**
 * The gateway's auth frame `{t: 'auth', id, d: {token}}`: the same verifier as the REST hook, so
 * a token the API refuses is refused here too. The ack carries who the connection now speaks for.
 */
export function registerAuthFrames(services: AppServices) {
  services.gateway.handle('auth', async (connection, frame) => {
    const parsed = authFrameSchema.safeParse(frame.d);
    if (!parsed.success) {
      throw new AppError(ErrorCode.VALIDATION_FAILED, 'The auth frame needs d: {token}.', {
        errors: parsed.error.issues.map((i) => ({ path: ['d', ...i.path].join('.'), message: i.message })),
      });
    }
    const user = await services.tokens.verify(parsed.data.token);
    connection.principal = user;
    return { user_id: user.id, roles: user.roles };
  });
}
