import type { NotificationRequest } from '../notifications/index.js';

/**
 * The inbox's words for join requests (docs/notifications.md): a closed group's managers hear of
 * a request, the requester of its approval. Declines, withdrawals and kicks notify nobody.
 */

type GroupName = { id: string; name: string };
type Requester = { id: string; username: string };

/** To one manager `to` of the group, of the request of `requester`. */
export const joinRequestedNote = (
  to: string,
  group: GroupName,
  requester: Requester,
): NotificationRequest => ({
  userId: to,
  code: 'group.join_requested',
  subject: `${requester.username} asked to join ${group.name}`,
  content: {
    group: { id: group.id, name: group.name },
    user: { id: requester.id, username: requester.username },
  },
  senderId: requester.id,
});

/** To the requester `to`, whose request the manager `approverId` approved. */
export const joinApprovedNote = (to: string, group: GroupName, approverId: string): NotificationRequest => ({
  userId: to,
  code: 'group.join_approved',
  subject: `Your request to join ${group.name} was approved`,
  content: { group: { id: group.id, name: group.name } },
  senderId: approverId,
});
