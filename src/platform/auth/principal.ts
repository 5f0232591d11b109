import type { AuthUser } from './access-tokens.js';
import type { GameServerPrincipal } from './game-server-auth.js';

/**
 * Who an authenticated socket speaks for: a signed-in user or a dedicated game server. The
 * gateway treats every kind alike (which frames it may send, when its session ends, switching
 * from one to another); this file is the one place that tells the kinds apart.
 */
export type Principal =
  | { readonly kind: 'user'; readonly user: AuthUser }
  | { readonly kind: 'gameServer'; readonly server: GameServerPrincipal };

export type PrincipalKind = Principal['kind'];

export function userPrincipal(user: AuthUser): Principal {
  return { kind: 'user', user };
}

export function gameServerPrincipal(server: GameServerPrincipal): Principal {
  return { kind: 'gameServer', server };
}

/** The user a principal is: the socket counts among theirs, receives their topic, and ends with their token. */
export function userOf(principal: Principal | undefined): AuthUser | null {
  return principal?.kind === 'user' ? principal.user : null;
}

export function gameServerOf(principal: Principal | undefined): GameServerPrincipal | null {
  return principal?.kind === 'gameServer' ? principal.server : null;
}

/** Equal for the same user or server however often it authenticates; `server:<id>` for a game server. */
export function principalId(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === 'user' ? principal.user.id : `server:${principal.server.serverId}`;
}

/** When the principal's credential stops being valid (ms since the epoch); server tokens are revoked instead. */
export function expiryOf(principal: Principal): number | undefined {
  return principal.kind === 'user' ? principal.user.expiresAt : undefined;
}

const USERS: readonly PrincipalKind[] = ['user'];
const USERS_AND_GAME_SERVERS: readonly PrincipalKind[] = ['user', 'gameServer'];

/** The kinds an operation that is not public admits: users, and game servers where it declares so. */
export function admittedKinds(op: { gameServer: boolean }): readonly PrincipalKind[] {
  return op.gameServer ? USERS_AND_GAME_SERVERS : USERS;
}

/** Matches the users' sockets of these sessions (revoked: logout, refresh-token reuse, account deletion). */
export function ofSessions(sessionIds: readonly string[]): (principal: Principal) => boolean {
  const ended = new Set(sessionIds);
  return (principal) => principal.kind === 'user' && ended.has(principal.user.sessionId);
}

/**
 * Matches these game servers and every game server of these worlds (stopped, failed, or gone with
 * a deleted world: their tokens are dead).
 */
export function ofGameServers(
  serverIds: readonly string[],
  worldIds: readonly string[] = [],
): (principal: Principal) => boolean {
  const ended = new Set(serverIds);
  const gone = new Set(worldIds);
  return (principal) =>
    principal.kind === 'gameServer' &&
    (ended.has(principal.server.serverId) || gone.has(principal.server.worldId));
}
