import type { TokenResponse } from '../../protocol/auth.js';
import type { Party } from '../../protocol/parties.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** What the party tables hold, to compare before and after a refused call. */
export interface PartiesState {
  parties: Record<string, unknown>[];
  members: Record<string, unknown>[];
  invites: Record<string, unknown>[];
}

/** `N` values of `T`: what `users(3)` destructures into without a check per element. */
export type Tuple<T, N extends number, R extends T[] = []> = R['length'] extends N
  ? R
  : Tuple<T, N, [...R, T]>;

/** The party tests' REST calls and table reads, for the app of a test file. */
export function partyCalls(app: () => TestApp) {
  const { call, expectStatus } = callsAs(app);

  const users = <N extends number>(count: N) =>
    Promise.all(Array.from({ length: count }, () => registerUser(app()))) as Promise<Tuple<TokenResponse, N>>;

  /** A new party led by `leader` (201). */
  const createParty = async (
    leader: TokenResponse,
    body?: { open?: boolean; max_size?: number },
  ): Promise<Party> => (await expectStatus(201, 'POST', '/api/parties', leader, body)).json();

  /** `user` joins the party (200), answering it. */
  const joined = async (user: TokenResponse, partyId: string): Promise<Party> =>
    (await expectStatus(200, 'POST', `/api/parties/${partyId}/join`, user)).json();

  /** `by` invites `user` (201). */
  const invited = async (by: TokenResponse, partyId: string, user: TokenResponse) =>
    (
      await expectStatus(201, 'POST', `/api/parties/${partyId}/invites`, by, { user_id: user.user.id })
    ).json();

  /** An open party of `leader` that each of `members` joined, in order. */
  const partyOf = async (
    leader: TokenResponse,
    members: readonly TokenResponse[],
    body: { open?: boolean; max_size?: number } = { open: true },
  ): Promise<Party> => {
    let party = await createParty(leader, { ...body, open: true });
    for (const member of members) party = await joined(member, party.id);
    if (body.open === false) {
      party = (await expectStatus(200, 'PATCH', `/api/parties/${party.id}`, leader, { open: false })).json();
    }
    return party;
  };

  /** Every row of the party tables about these parties and users, in a fixed order. */
  const stateOf = async (
    partyIds: readonly string[],
    userIds: readonly string[] = [],
  ): Promise<PartiesState> => {
    const db = app().db;
    return {
      parties: await queryRows(
        db,
        'select id, leader_id, open, max_size from parties where id = any(?::uuid[]) order by id',
        [`{${partyIds.join(',')}}`],
      ),
      members: await queryRows(
        db,
        `select party_id, user_id, joined_at from party_members
         where party_id = any(?::uuid[]) or user_id = any(?::uuid[]) order by party_id, user_id`,
        [`{${partyIds.join(',')}}`, `{${userIds.join(',')}}`],
      ),
      invites: await queryRows(
        db,
        `select party_id, user_id, invited_by, created_at, expires_at from party_invites
         where party_id = any(?::uuid[]) or user_id = any(?::uuid[]) order by party_id, user_id`,
        [`{${partyIds.join(',')}}`, `{${userIds.join(',')}}`],
      ),
    };
  };

  /** Asserts the exact refusal: status and code. */
  const refused = async (status: number, code: string, ...args: Parameters<typeof call>) => {
    const response = await call(...args);
    const body = response.json() as { code?: string };
    if (response.statusCode !== status || body.code !== code) {
      throw new Error(
        `${args[0]} ${args[1]}: expected ${status} ${code}, got ${response.statusCode} ${response.body}`,
      );
    }
    return response;
  };

  return { call, expectStatus, users, createParty, joined, invited, partyOf, stateOf, refused };
}
