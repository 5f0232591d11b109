import type { TokenResponse } from '../../protocol/auth.js';
import type { RestBinding, SentInputOf } from '../../protocol/operation.js';
import type { OperationName, Operations } from '../../protocol/operations.js';

/** The shapes of the parity table's rows (test/protocol/parity.test.ts), shared by its row files. */

export type RestName = {
  [N in OperationName]: Operations[N]['rest'] extends RestBinding ? N : never;
}[OperationName];

export interface Accounts {
  /** The account the client's socket is authenticated as: frame rows run as this user. */
  me: TokenResponse;
  other: TokenResponse;
}

export interface Run<N extends RestName> {
  token?: string;
  input?: SentInputOf<Operations[N]>;
}

export interface Row<N extends RestName> {
  /** The token and input of one run, called once per transport: rows that spend or end a session take a fresh user each time. */
  prepare(accounts: Accounts): Promise<Run<N>> | Run<N>;
  /** Each run acts on a fresh user, so user ids and names differ between the two answers. */
  fresh?: boolean;
}
