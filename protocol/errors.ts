import { authErrors } from './errors/auth.js';
import { chatErrors } from './errors/chat.js';
import { economyErrors } from './errors/economy.js';
import { extensionErrors } from './errors/extensions.js';
import { gameServerErrors } from './errors/gameservers.js';
import { groupErrors } from './errors/groups.js';
import { leaderboardErrors } from './errors/leaderboards.js';
import { partyErrors } from './errors/parties.js';
import {
  availabilityErrors,
  gatewayErrors,
  internalErrors,
  quotaErrors,
  requestErrors,
} from './errors/platform.js';
import { worldErrors } from './errors/worlds.js';
import { mergeParts } from './parts.js';

/**
 * Stable error codes shared by REST problem details (`code`) and gateway error frames (`code`).
 * Clients switch on these strings; never rename one, only add.
 *
 * Each domain declares its codes, each with the HTTP status REST answers it with, in
 * `protocol/errors/<domain>.ts`; this list assembles them. Its order is the order of the `code`
 * enum in the OpenAPI document, the order the codes were added in: a new part goes before
 * `internal`. Two parts declaring one code throw at import time.
 */
export const errorParts = {
  request: requestErrors,
  auth: authErrors,
  gateway: gatewayErrors,
  availability: availabilityErrors,
  worlds: worldErrors,
  chat: chatErrors,
  gameservers: gameServerErrors,
  quota: quotaErrors,
  groups: groupErrors,
  economy: economyErrors,
  extensions: extensionErrors,
  leaderboards: leaderboardErrors,
  parties: partyErrors,
  internal: internalErrors,
};

const statuses = mergeParts(errorParts);

export type ErrorCode = keyof typeof statuses;

/** Each code as its own value (`ErrorCode.NOT_FOUND === 'NOT_FOUND'`), for code that names one. */
export const ErrorCode = Object.fromEntries(Object.keys(statuses).map((code) => [code, code])) as {
  readonly [Code in ErrorCode]: Code;
};

/**
 * The only code -> HTTP status table, assembled from the parts, which hold each status beside its
 * code so that a new code is one edit. The gateway sends the code alone; REST answers with this status.
 */
export const httpStatusByCode: Record<ErrorCode, number> = statuses;

export interface FieldError {
  /** Dotted path of the offending field, `''` for the whole body. */
  path: string;
  message: string;
}
