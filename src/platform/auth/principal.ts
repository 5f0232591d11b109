import type { AuthUser } from './access-tokens.js';
import type { ServicePrincipal } from './service-tokens.js';

/**
 * Who an authenticated socket speaks for: a signed-in user or a service (service-tokens.ts). The
 * gateway treats every kind alike (which frames it may send, when its session ends, switching
 * from one to another); this file is the one place that tells the kinds apart.
 */
export type Principal =
  | { readonly kind: 'user'; readonly user: AuthUser }
  | { readonly kind: 'service'; readonly service: ServicePrincipal };

export type PrincipalKind = Principal['kind'];

export function userPrincipal(user: AuthUser): Principal {
  return { kind: 'user', user };
}

export function servicePrincipal(service: ServicePrincipal): Principal {
  return { kind: 'service', service };
}

/** The user a principal is: the socket counts among theirs, receives their topic, and ends with their token. */
export function userOf(principal: Principal | undefined): AuthUser | null {
  return principal?.kind === 'user' ? principal.user : null;
}

export function serviceOf(principal: Principal | undefined): ServicePrincipal | null {
  return principal?.kind === 'service' ? principal.service : null;
}

/** Equal for the same user or service however often it authenticates; `service:<id>` for a service. */
export function principalId(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === 'user' ? principal.user.id : `service:${principal.service.id}`;
}

/** When the principal's credential stops being valid (ms since the epoch); service tokens are revoked instead. */
export function expiryOf(principal: Principal): number | undefined {
  return principal.kind === 'user' ? principal.user.expiresAt : undefined;
}

const USERS: readonly PrincipalKind[] = ['user'];
const USERS_AND_SERVICES: readonly PrincipalKind[] = ['user', 'service'];

/** The kinds an operation that is not public admits: users, and services where it takes their tokens. */
export function admittedKinds(op: { serviceToken: boolean }): readonly PrincipalKind[] {
  return op.serviceToken ? USERS_AND_SERVICES : USERS;
}

/** Matches the users' sockets of these sessions (revoked: logout, refresh-token reuse, account deletion). */
export function ofSessions(sessionIds: readonly string[]): (principal: Principal) => boolean {
  const ended = new Set(sessionIds);
  return (principal) => principal.kind === 'user' && ended.has(principal.user.sessionId);
}

/** Matches the services of these ids and every service of these scopes (their tokens are dead). */
export function ofServices(
  ids: readonly string[],
  scopes: readonly string[] = [],
): (principal: Principal) => boolean {
  const ended = new Set(ids);
  const gone = new Set(scopes);
  return (principal) =>
    principal.kind === 'service' && (ended.has(principal.service.id) || gone.has(principal.service.scope));
}
