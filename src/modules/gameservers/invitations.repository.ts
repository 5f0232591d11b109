import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { toUuidArray } from '../../platform/ids.js';
import { blockBetweenSql, friendsBetweenSql } from '../social/index.js';

/**
 * Server invitations and the admission rule of instance access (migration 0037,
 * docs/gameservers.md "Instance access"): a public server admits whoever may read its world (the
 * world's rule, checked before); a friends server its owner, the owner's friends and invitees; an
 * invite server its owner and invitees. On friends and invite servers a block either way with the
 * owner refuses, an invitation included. A server whose owner's account is gone admits nobody new.
 */

export interface InvitationRow {
  server_id: string;
  user_id: string;
  invited_by: string;
  created_at: Date;
}

/**
 * The users among `userIds` that the server's access refuses, in one statement for any number of
 * users (a party's placement asks for all its members at once). None when the server is unknown.
 */
export async function refusedByAccess(
  data: DataAccess,
  serverId: string,
  userIds: readonly string[],
): Promise<string[]> {
  const rows = await executeBound<{ id: string }>(
    data,
    `select u.id from game_servers s cross join unnest($2::uuid[]) as u (id)
     where s.id = $1 and not coalesce(
       s.access = 'public' or s.requested_by = u.id
       or (not ${blockBetweenSql('s.requested_by', 'u.id')}
           and (exists (select 1 from game_server_invitations i where i.server_id = s.id and i.user_id = u.id)
                or (s.access = 'friends' and ${friendsBetweenSql('s.requested_by', 'u.id')}))),
       false)`,
    [serverId, toUuidArray(userIds)],
  );
  return rows.map((row) => row.id);
}

/**
 * Records an invitation unless the user holds one to the server already; answers the one they
 * hold now, and whether this call made it (a second invitation changes nothing).
 */
export async function insertInvitation(
  data: DataAccess,
  invitation: InvitationRow,
): Promise<{ invitation: InvitationRow; created: boolean }> {
  const params = [invitation.server_id, invitation.user_id];
  const [inserted] = await executeBound<InvitationRow>(
    data,
    `insert into game_server_invitations (server_id, user_id, invited_by, created_at) values ($1, $2, $3, $4)
     on conflict (server_id, user_id) do nothing
     returning server_id, user_id, invited_by, created_at`,
    [...params, invitation.invited_by, invitation.created_at],
  );
  if (inserted) return { invitation: inserted, created: true };
  // Another statement's snapshot: it sees the invitation that made this one's insert do nothing.
  const [held] = await executeBound<InvitationRow>(
    data,
    `select server_id, user_id, invited_by, created_at from game_server_invitations
     where server_id = $1 and user_id = $2`,
    params,
  );
  return { invitation: held ?? invitation, created: false };
}

/**
 * Invitations of `userIds` to the server by `invitedBy`, in one statement; an invitation a user
 * holds already stays as it is. A party placed on a friends or invite server its leader owns is
 * invited this way: its members are admitted by it as long as it lives, as any invitee.
 */
export async function inviteAll(
  data: DataAccess,
  invitation: { serverId: string; userIds: readonly string[]; invitedBy: string; at: Date },
): Promise<void> {
  if (invitation.userIds.length === 0) return;
  await executeBound(
    data,
    `insert into game_server_invitations (server_id, user_id, invited_by, created_at)
     select $1, u.id, $3, $4 from unnest($2::uuid[]) as u (id)
     on conflict (server_id, user_id) do nothing`,
    [invitation.serverId, toUuidArray(invitation.userIds), invitation.invitedBy, invitation.at],
  );
}
