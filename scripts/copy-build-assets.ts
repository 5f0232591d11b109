import { cp } from 'node:fs/promises';

/**
 * The files the compiled service reads beside its modules, which tsc does not emit: the console's
 * stylesheet and script, the local spawner's default game server and the agones spawner's default
 * GameServer template. Copied into dist/ at the paths the modules resolve them by, as the
 * Dockerfile's image has them.
 */
await cp('src', 'dist/src', { recursive: true, filter: (path) => !path.endsWith('.ts') });
await cp('examples/gameserver/server.mjs', 'dist/examples/gameserver/server.mjs');
await cp('deploy/agones/gameserver-template.yaml', 'dist/deploy/agones/gameserver-template.yaml');
