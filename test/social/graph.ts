import type { TokenResponse } from '../../protocol/auth.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** A tuple of N users, so that destructuring gives defined values. */
type Users<N extends number, T extends TokenResponse[] = []> = T['length'] extends N
  ? T
  : Users<N, [...T, TokenResponse]>;

/** The social graph tests' REST calls and table reads, for the app of a test file. */
export function socialGraph(app: () => TestApp) {
  const { call, expectStatus } = callsAs(app);

  /** Every friendship, follow and block row that involves one of `ids`, in a stable order. */
  const rowsOf = async (...ids: string[]) => {
    const list = ids.map(() => '?').join(', ');
    const both = [...ids, ...ids];
    const [friendships, follows, blocks] = await Promise.all([
      queryRows(
        app().db,
        `select requester_id, addressee_id, status::text as status from friendships
         where requester_id in (${list}) or addressee_id in (${list}) order by 1, 2`,
        both,
      ),
      queryRows(
        app().db,
        `select follower_id, followed_id from follows
         where follower_id in (${list}) or followed_id in (${list}) order by 1, 2`,
        both,
      ),
      queryRows(
        app().db,
        `select blocker_id, blocked_id from blocks
         where blocker_id in (${list}) or blocked_id in (${list}) order by 1, 2`,
        both,
      ),
    ]);
    return { friendships, follows, blocks };
  };

  /** `a` asks `b` (201), then `b` accepts (200): they are friends. */
  const befriend = async (a: TokenResponse, b: TokenResponse) => {
    await expectStatus(201, 'POST', '/api/friends/requests', a, { user_id: b.user.id });
    await expectStatus(200, 'POST', `/api/friends/requests/${a.user.id}/accept`, b);
  };

  const users = <N extends number>(n: N) =>
    Promise.all(Array.from({ length: n }, () => registerUser(app()))) as Promise<Users<N>>;

  return { call, expectStatus, rowsOf, befriend, users };
}
