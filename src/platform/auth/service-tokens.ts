import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '../errors.js';
import { bearerToken } from './http-auth.js';

/**
 * A caller that is a process rather than a person, as proven by a service token a module issued:
 * its id, and the one scope (a resource's id) its token is good for. What the scope names is the
 * issuing module's to say; services that serve such callers check it themselves.
 */
export interface ServicePrincipal {
  readonly id: string;
  readonly scope: string;
}

/** The module that issues service tokens, as it plugs into the platform. */
export interface ServiceTokenIssuer {
  /** What every token starts with and no access token (a JWT, `eyJ...`) does. */
  readonly prefix: string;
  /** What the tokens are called in a refusal: "A valid <name> is required". */
  readonly name: string;
  /** The principal of a live token; rejects (401) any other. */
  verify(token: string): Promise<ServicePrincipal>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `requireServiceToken` hook on routes declaring `serviceToken`; null elsewhere. */
    service: ServicePrincipal | null;
  }
  interface FastifyContextConfig {
    /** Called with a service token, never by users (secureByDefault). */
    serviceToken?: boolean;
  }
}

/**
 * Where the module that issues service tokens plugs in its check (the platform builds the hook
 * of the routes that take them before any module exists); until one does, every token is refused.
 */
export class ServiceTokens {
  private issuer: ServiceTokenIssuer | undefined;

  provide(issuer: ServiceTokenIssuer): void {
    if (this.issuer) throw new Error(`Service tokens are already issued as ${this.issuer.name}s.`);
    this.issuer = issuer;
  }

  /** Whether a bearer credential is a service token rather than an access token (by its prefix). */
  recognizes(token: string): boolean {
    return this.issuer !== undefined && token.startsWith(this.issuer.prefix);
  }

  async verify(token: string): Promise<ServicePrincipal> {
    if (!this.issuer) throw this.refusal();
    return this.issuer.verify(token);
  }

  /** The 401 of a call that needs a service token and brings none. */
  refusal(): AppError {
    const name = this.issuer?.name ?? 'service token';
    return new AppError(ErrorCode.UNAUTHENTICATED, `A valid ${name} is required (Authorization: Bearer).`);
  }
}

/**
 * The onRequest hook of routes declaring `serviceToken`: the bearer must be a live service token.
 * A user's access token is refused here like any other unknown credential, as service tokens are
 * on the routes of users.
 */
export function requireServiceToken(tokens: ServiceTokens) {
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const token = bearerToken(request.headers.authorization);
    if (!token) {
      done(tokens.refusal());
      return;
    }
    tokens.verify(token).then((principal) => {
      request.service = principal;
      done();
    }, done);
  };
}
