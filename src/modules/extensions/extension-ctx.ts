import type { Notification } from '../../../protocol/notifications.js';
import type { Role } from '../../platform/auth/access-tokens.js';
import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import type { LogSink } from '../../platform/log.js';
import type { LeaderboardsAccess } from '../leaderboards/index.js';
import type { ExtensionNotification, NotificationsApi } from '../notifications/index.js';
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
  /** Leaderboards and tournaments as a game server writes them, and their standings (docs/leaderboards.md). */
  readonly leaderboards: LeaderboardsAccess;
  /** Sends a user a notification from the system (docs/notifications.md); answers it as their inbox lists it. */
  readonly notifications: {
    send(user_id: string, notification: ExtensionNotification): Promise<Notification>;
  };
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
  leaderboards: LeaderboardsAccess;
  notifications: Pick<NotificationsApi, 'send'>;
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

/**
 * One call's ctx. Its services are made when first used: most calls touch one or none, and a call
 * that answers at once (an echo rpc, a no-op hook) then costs one object.
 */
class CallCtx implements ExtensionCtx {
  // Private fields: an extension's code sees the ctx's API and nothing of what is behind it.
  readonly #services: CtxServices;
  readonly #site: CallSite;
  readonly #deadline: Deadline;
  readonly #who: { caller: ExtensionCaller | null; server: ExtensionCtx['server']; log: LogSink };
  #log: ExtensionCtx['log'] | undefined;
  #storage: ExtensionStorage | undefined;
  #economy: ExtensionCtx['economy'] | undefined;
  #users: ExtensionCtx['users'] | undefined;
  #leaderboards: LeaderboardsAccess | undefined;
  #notifications: ExtensionCtx['notifications'] | undefined;

  constructor(
    services: CtxServices,
    site: CallSite,
    deadline: Deadline,
    who: { caller: ExtensionCaller | null; server: ExtensionCtx['server']; log: LogSink },
  ) {
    this.#services = services;
    this.#site = site;
    this.#deadline = deadline;
    this.#who = who;
  }

  get caller() {
    return this.#who.caller;
  }

  get server() {
    return this.#who.server;
  }

  get log() {
    this.#log ??= callLog(this.#who.log, this.#site);
    return this.#log;
  }

  get signal() {
    return this.#deadline.signal;
  }

  get economy() {
    const services = this.#services;
    const deadline = this.#deadline;
    const actor = { kind: 'extension' as const, name: this.#site.extension };
    const log = this.#who.log;
    this.#economy ??= {
      grant: (input) => service(deadline, () => services.grant(services.data, actor, input, log)),
    };
    return this.#economy;
  }

  get storage() {
    const deadline = this.#deadline;
    this.#storage ??= extensionStorage(
      this.#services.data,
      this.#site.extension,
      () => guard(deadline),
      this.#services.storageLimits,
    );
    return this.#storage;
  }

  get users() {
    const services = this.#services;
    const deadline = this.#deadline;
    this.#users ??= {
      get: (id) =>
        service(deadline, async () =>
          typeof id === 'string' && isId(id) ? ((await services.account(services.data, id)) ?? null) : null,
        ),
    };
    return this.#users;
  }

  get leaderboards() {
    const access = this.#services.leaderboards;
    const deadline = this.#deadline;
    this.#leaderboards ??= {
      submit: (input) => service(deadline, () => access.submit(input)),
      submitToTournament: (input) => service(deadline, () => access.submitToTournament(input)),
      records: (id, query) => service(deadline, () => access.records(id, query)),
      tournamentRecords: (id, query) => service(deadline, () => access.tournamentRecords(id, query)),
    };
    return this.#leaderboards;
  }

  get notifications() {
    const services = this.#services;
    const deadline = this.#deadline;
    const actor = { kind: 'extension' as const, name: this.#site.extension };
    const log = this.#who.log;
    this.#notifications ??= {
      send: (userId, notification) =>
        service(deadline, () => services.notifications.send(services.data, actor, userId, notification, log)),
    };
    return this.#notifications;
  }
}

/** A fresh ctx for one call. */
export function extensionCtx(
  services: CtxServices,
  site: CallSite,
  deadline: Deadline,
  who: { caller: ExtensionCaller | null; server: ExtensionCtx['server']; log: LogSink },
): ExtensionCtx {
  return new CallCtx(services, site, deadline, who);
}
