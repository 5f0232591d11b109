import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Module names the platform's code may contain, because it uses the word in its own sense; any
 * other module's name in an identifier means a domain leaked into the platform (the gateway once
 * had `ctx.gameServer` where it now has service tokens).
 */
const OWN_SENSE: Record<string, string> = {
  auth: 'authentication is the platform\'s (its auth/ folder, the "auth" frame)',
  users: 'a signed-in user is the principal the platform knows',
  discovery: "MikroORM's `discovery` option",
  extensions: "MikroORM's `extensions` option, which loads its Migrator",
  settings: 'a setting is a configuration variable, which the platform reads and validates',
  console: "JavaScript's `console`, which the KV stores warn through",
  admin: 'a role the access tokens carry (auth/access-tokens.ts), ranked by requireRole',
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The identifiers of a source text: comments and string literals (examples, prose) left out. */
function identifiers(source: string): string[] {
  const code = source
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, "''");
  return code.match(/[A-Za-z_$][\w$]*/g) ?? [];
}

describe('the platform vocabulary', () => {
  it("names no module's domain in src/platform's code (gameServer, worldId, ...)", () => {
    const modules = readdirSync(join(root, 'src/modules'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && !(entry.name in OWN_SENSE))
      .map((entry) => ({ name: entry.name, stem: entry.name.replace(/s$/, '') }));
    expect(modules.map(({ name }) => name)).toContain('gameservers');
    const found: string[] = [];
    for (const file of filesUnder(join(root, 'src/platform'))) {
      for (const id of new Set(identifiers(readFileSync(file, 'utf8')))) {
        const word = id.replaceAll('_', '').toLowerCase();
        for (const { name, stem } of modules) {
          if (word.includes(stem)) found.push(`${relative(root, file)}: ${id} (module ${name})`);
        }
      }
    }
    expect(found).toEqual([]);
  });

  it('reads identifiers only, not comments or strings', () => {
    const source = `// a game server's socket\nconst greeting = 'worlds'; /* chatRoom */\nlet gameServerId = 1;`;
    expect(identifiers(source)).toEqual(['const', 'greeting', 'let', 'gameServerId']);
  });
});
