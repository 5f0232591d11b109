import type { Role } from '../../platform/auth/access-tokens.js';
import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import type { LogSink } from '../../platform/log.js';
import type { CallSite, Deadline } from './calls.js';
import { ExtensionServiceError } from './service-error.js';
import { type ExtensionStorage, extensionStorage } from './storage.js';

/** Who called, as an extension sees them: roles as GET /api/users/me shows them. */
export interface ExtensionCaller {
  user_id: string;
  username: string;
  roles: Role[];
}

export interface GrantInput {
  user_id: string;
  amount: number;
  reason: string;
  idempotency_key: string;
}

export interface GrantResult {
  transaction_id: string;
  user_id: string;
  amount: number;
  currency: string;
  balance: number;
  replayed: boolean;
}

export interface ExtensionUser {
  id: string;
  username: string;
  created_at: string;
  roles: Role[];
}

type LogMethod = (objectOrMessage: object | string, message?: string) => void;

/** What every rpc, hook and event handler call of an extension gets (docs/extensions.md, "The ctx object"). */
export interface ExtensionCtx {
  readonly caller: ExtensionCaller | null;
  readonly server: { server_id: string; world_id: string } | null;
  readonly log: { debug: LogMethod; info: LogMethod; warn: LogMethod; error: LogMethod };
  readonly signal: AbortSignal;
  readonly economy: { grant(input: GrantInput): Promise<GrantResult> };
  readonly storage: ExtensionStorage;
  readonly users: { get(id: string): Promise<ExtensionUser | null> };
}

/** The modules' functions behind the ctx services. */
export interface CtxServices {
  data: DataAccess;
  grant(
    data: DataAccess,
    actor: { kind: 'extension'; name: string },
    input: GrantInput,
    log: LogSink,
  ): Promise<GrantResult>;
  account(data: DataAccess, id: string): Promise<ExtensionUser | undefined>;
  storageLimits: { maxRecords: number };
}

/**
 * Runs a ctx service: refused once the call's deadline passed (so a call answered 503 writes
 * nothing afterwards), its refusals turned into an ExtensionServiceError with their code; a lost
 * database or Redis goes on as it is, so the call answers 503 and not EXTENSION_ERROR.
 */
async function service<T>(deadline: Deadline, run: () => Promise<T>): Promise<T> {
  guard(deadline);
  try {
    return await run();
  } catch (error) {
    if (error instanceof AppError && error.code !== ErrorCode.SERVICE_UNAVAILABLE) {
      throw new ExtensionServiceError(error.code, error.message);
    }
    throw error;
  }
}

function guard(deadline: Deadline): void {
  if (deadline.expired()) {
    throw new ExtensionServiceError('EXTENSION_TIMEOUT', "This call's deadline passed; nothing was done.");
  }
}

/** A logger whose lines carry the extension, the kind and the name of the call. */
function callLog(log: LogSink, site: CallSite): ExtensionCtx['log'] {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error'): LogMethod =>
    (objectOrMessage, message) => {
      if (typeof objectOrMessage === 'string') log[level]({ ...site }, objectOrMessage);
      else log[level]({ ...objectOrMessage, ...site }, message);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A fresh ctx for one call. Its storage is made when first used. */
export function extensionCtx(
  services: CtxServices,
  site: CallSite,
  deadline: Deadline,
  who: { caller: ExtensionCaller | null; server: ExtensionCtx['server']; log: LogSink },
): ExtensionCtx {
  const { data } = services;
  const log = callLog(who.log, site);
  let storage: ExtensionStorage | undefined;
  return {
    caller: who.caller,
    server: who.server,
    log,
    get signal() {
      return deadline.signal;
    },
    economy: {
      grant: (input) =>
        service(deadline, () =>
          services.grant(data, { kind: 'extension', name: site.extension }, input, who.log),
        ),
    },
    get storage() {
      storage ??= extensionStorage(data, site.extension, () => guard(deadline), services.storageLimits);
      return storage;
    },
    users: {
      get: (id) =>
        service(deadline, async () =>
          typeof id === 'string' && isId(id) ? ((await services.account(data, id)) ?? null) : null,
        ),
    },
  };
}
