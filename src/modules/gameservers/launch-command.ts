import { fileURLToPath } from 'node:url';

/** The reference game server, run when GAMESERVER_COMMAND is not set (examples/gameserver/). */
export const REFERENCE_SERVER = fileURLToPath(
  new URL('../../../examples/gameserver/server.mjs', import.meta.url),
);

/**
 * GAMESERVER_COMMAND as the program and arguments to execute, without a shell: a JSON array of
 * strings, or words separated by spaces (no quoting: use the JSON form for arguments with spaces).
 * The config checked the JSON form at startup. Unset, the reference server under the Node running
 * the service.
 */
export function launchCommand(setting: string | undefined): readonly string[] {
  if (setting === undefined) return [process.execPath, REFERENCE_SERVER];
  if (setting.startsWith('[')) return JSON.parse(setting) as string[];
  return setting.split(/\s+/).filter((word) => word !== '');
}

/** The arguments every game server is launched with (docs/gameservers.md), after the command's own. */
export function launchArguments(input: {
  apiUrl: string;
  wsUrl: string;
  token: string;
  worldId: string;
  port?: number;
}): string[] {
  return [
    '--api-url',
    input.apiUrl,
    '--server-token',
    input.token,
    '--world-id',
    input.worldId,
    '--ws-url',
    input.wsUrl,
    ...(input.port === undefined ? [] : ['--port', String(input.port)]),
  ];
}
