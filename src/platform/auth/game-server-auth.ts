import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '../errors.js';
import { bearerToken } from './http-auth.js';

/** A dedicated game server calling the internal API, as proven by its per-spawn token. */
export interface GameServerPrincipal {
  serverId: string;
  /** The one world whose content the token may read. */
  worldId: string;
}

export type GameServerVerifier = (token: string) => Promise<GameServerPrincipal>;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `requireGameServer` hook on /internal routes; null elsewhere. */
    gameServer: GameServerPrincipal | null;
  }
  interface FastifyContextConfig {
    /** Called by game servers with their server token (the /internal API), never by users. */
    gameServer?: boolean;
  }
}

/** Server tokens start so (`gs_`), which no access token (a JWT, `eyJ...`) does. */
export const GAME_SERVER_TOKEN_PREFIX = 'gs_';

export function isGameServerToken(token: string): boolean {
  return token.startsWith(GAME_SERVER_TOKEN_PREFIX);
}

const refused = () =>
  new AppError(ErrorCode.UNAUTHENTICATED, 'A valid game server token is required (Authorization: Bearer).');

/**
 * Where the token check of the module that issues server tokens plugs in (the platform builds the
 * /internal hook before any module exists); until one is provided every token is refused.
 */
export class GameServerCredentials {
  private verifier: GameServerVerifier | undefined;

  provide(verifier: GameServerVerifier): void {
    this.verifier = verifier;
  }

  async verify(token: string): Promise<GameServerPrincipal> {
    if (!this.verifier) throw refused();
    return this.verifier(token);
  }
}

/**
 * The onRequest hook of /internal routes: the bearer must be a live server token. A user's access
 * token is refused here like any other unknown credential, as server tokens are on /api.
 */
export function requireGameServer(credentials: GameServerCredentials) {
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const token = bearerToken(request.headers.authorization);
    if (!token) {
      done(refused());
      return;
    }
    credentials.verify(token).then((principal) => {
      request.gameServer = principal;
      done();
    }, done);
  };
}
