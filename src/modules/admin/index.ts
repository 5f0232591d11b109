import {
  adminRolesGrant,
  adminRolesRevoke,
  adminSessionsRevoke,
  adminUsersGet,
  adminUsersList,
  adminUsersSuspend,
  adminUsersUnsuspend,
} from '../../../protocol/admin.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import type { AuditApi } from '../audit/index.js';
import type { AuthApi } from '../auth/index.js';
import type { UsersApi } from '../users/index.js';
import { adminCommands } from './admin.commands.js';
import { AdminService } from './admin.service.js';

/**
 * The operator console's account administration under /api/admin/users (docs/admin.md): the
 * rules stay with the modules that own the state (suspensions and roles in users, sessions in
 * auth); this module checks who may act and ties them together in one transaction.
 */
export const adminModule = defineModule({
  name: 'admin',
  tables: [],
  needs: ['users', 'auth', 'audit'],
  commands: adminCommands,
  setup({ tokens }, { users, auth, audit }: { users: UsersApi; auth: AuthApi; audit: AuditApi }) {
    const admin = new AdminService({ users, sessions: auth, tokens, audit });
    return {
      api: {},
      operations: [
        serve(adminUsersList, (ctx, query) => admin.list(ctx, query)),
        serve(adminUsersGet, (ctx, { user_id }) => admin.get(ctx, user_id)),
        serve(adminUsersSuspend, (ctx, { user_id, ...input }) => admin.suspend(ctx, user_id, input)),
        serve(adminUsersUnsuspend, (ctx, { user_id }) => admin.unsuspend(ctx, user_id)),
        serve(adminRolesGrant, (ctx, { user_id, role }) => admin.changeRole(ctx, user_id, role, 'grant')),
        serve(adminRolesRevoke, (ctx, { user_id, role }) => admin.changeRole(ctx, user_id, role, 'revoke')),
        serve(adminSessionsRevoke, (ctx, { user_id }) => admin.revokeSessions(ctx, user_id)),
      ],
    };
  },
});
