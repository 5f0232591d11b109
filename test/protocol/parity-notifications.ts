import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerWithRole } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import type { RestName, Row } from './parity-types.js';

/** The inbox rows of the parity table: reads of `me`'s inbox, writes that change nothing visible twice. */

type NotificationName = Extract<RestName, `notifications.${string}`>;

export function notificationRows(appOf: () => TestApp): { [N in NotificationName]: Row<N> } {
  let admin: Promise<TokenResponse> | undefined;
  const anAdmin = () => {
    admin ??= registerWithRole(appOf(), 'admin');
    return admin;
  };
  return {
    'notifications.list': { prepare: ({ me }) => ({ token: me.access_token, input: { limit: 5 } }) },
    'notifications.unreadCount': { prepare: ({ me }) => ({ token: me.access_token }) },
    'notifications.read': { prepare: ({ me }) => ({ token: me.access_token, input: { all: true } }) },
    'notifications.delete': {
      // Each run deletes a notification broadcast to `me` for it.
      prepare: async ({ me }) => {
        const admin = (await anAdmin()).access_token;
        await appOf().http.inject({
          method: 'POST',
          url: '/api/admin/notifications',
          headers: bearer(admin),
          payload: { user_ids: [me.user.id], code: 'parity.delete', subject: 'To delete' },
        });
        const list = await appOf().http.inject({
          method: 'GET',
          url: '/api/notifications?limit=1',
          headers: bearer(me.access_token),
        });
        const [newest] = (list.json() as { items: { id: string }[] }).items;
        return { token: me.access_token, input: { notification_id: newest?.id ?? 'none' } };
      },
    },
    'notifications.admin.broadcast': {
      fresh: true,
      prepare: async ({ other }) => ({
        token: (await anAdmin()).access_token,
        input: { user_ids: [other.user.id], code: 'news.update', subject: 'Servers restart at noon' },
      }),
    },
  };
}
