import { z } from 'zod';
import { AppError } from '../../platform/errors.js';
import { command } from '../../platform/module.js';
import { changeRole } from '../users/index.js';

const roleArgs = z.object({ username: z.string().min(1).max(200), role: z.string().min(1).max(64) }).strict();

/**
 * `atrium admin grant|revoke <username> <role>`: the operator's way to the first admin, before
 * anyone can use the console. A refusal (no such account, an unknown role) is the command's
 * answer, exit code 1 with its message, the same from a server and from the CLI alone.
 */
const roleCommand = (change: 'grant' | 'revoke') =>
  command(`admin.${change}`, {
    args: roleArgs,
    run: async ({ data, actor }, { username, role }) => {
      try {
        const roles = await changeRole(data, username, role, change, actor);
        const line = `${username} now has roles: ${roles.join(', ')} (effective from the next login or token refresh)`;
        return { exitCode: 0, stdout: [line], stderr: [] };
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        return { exitCode: 1, stdout: [], stderr: [error.message] };
      }
    },
  });

export const adminCommands = [roleCommand('grant'), roleCommand('revoke')];
