import { cp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FINGERPRINT_FILE, migrationsFingerprint } from '../src/platform/embedded-cluster.js';

/**
 * The files the compiled service reads beside its modules, which tsc does not emit: the console's
 * stylesheet and script, the local spawner's default game server and the agones spawner's default
 * GameServer template. Copied into dist/ at the paths the modules resolve them by, as the
 * Dockerfile's image has them. Also the migrations' fingerprint, so the build and the sources name
 * the same migrated cluster in the embedded database's cache (src/platform/embedded-cluster.ts).
 */
await cp('src', 'dist/src', { recursive: true, filter: (path) => !path.endsWith('.ts') });
await cp('examples/gameserver/server.mjs', 'dist/examples/gameserver/server.mjs');
await cp('deploy/agones/gameserver-template.yaml', 'dist/deploy/agones/gameserver-template.yaml');
await writeFile(join('dist', 'migrations', FINGERPRINT_FILE), await migrationsFingerprint('migrations'));
