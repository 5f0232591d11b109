import { describe, expect, it } from 'vitest';
import {
  launchArguments,
  launchCommand,
  REFERENCE_SERVER,
} from '../../src/modules/gameservers/launch-command.js';

describe('the game server launch command', () => {
  it('runs the reference server under this Node when GAMESERVER_COMMAND is unset', () => {
    expect(launchCommand(undefined)).toEqual([process.execPath, REFERENCE_SERVER]);
    expect(REFERENCE_SERVER).toMatch(/examples\/gameserver\/server\.mjs$/);
  });

  it('splits words on spaces without any shell meaning: quotes, semicolons and $() stay literal arguments', () => {
    expect(launchCommand('  ./server  --mode "a b";  $(rm -rf x) ')).toEqual([
      './server',
      '--mode',
      '"a',
      'b";',
      '$(rm',
      '-rf',
      'x)',
    ]);
  });

  it('takes a JSON array as the exact argument list, spaces included', () => {
    expect(launchCommand('["/opt/my server", "--flag=a b"]')).toEqual(['/opt/my server', '--flag=a b']);
  });

  it('appends --api-url, --server-token, --world-id, --ws-url and --port as separate arguments, whatever they hold', () => {
    const args = launchArguments({
      apiUrl: 'http://h:1',
      wsUrl: 'ws://h:2/ws',
      token: 'gs_x',
      worldId: "w; echo 'hi'",
      port: 7000,
    });
    expect(args).toEqual([
      '--api-url',
      'http://h:1',
      '--server-token',
      'gs_x',
      '--world-id',
      "w; echo 'hi'",
      '--ws-url',
      'ws://h:2/ws',
      '--port',
      '7000',
    ]);
    expect(launchArguments({ apiUrl: 'u', wsUrl: 'w', token: 't', worldId: 'w' })).not.toContain('--port');
  });
});
