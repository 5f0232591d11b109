import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildApp } from '../../src/app.js';
import { modules } from '../../src/modules/index.js';
import { executeBound } from '../../src/platform/db.js';
import { command, defineModule, type ModuleDefinition, setupModules } from '../../src/platform/module.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';

const reached = { 200: z.object({ reached: z.boolean() }) };

/** An operator's command answering what it ran with: its caller, its argument and a database read. */
const echo = command('probe.echo', {
  args: z.object({ text: z.string() }).strict(),
  run: async ({ actor, data }, { text }) => {
    const [row] = await executeBound<{ one: number }>(data, 'select 1 as one', []);
    return {
      exitCode: 0,
      stdout: [`${actor.kind} said ${text}; the database answered ${row?.one}`],
      stderr: [],
    };
  },
});

/**
 * A module with two plain routes, one that forgets to declare itself public and one that does,
 * and an operator's command.
 */
const probeModule = defineModule({
  name: 'probe',
  tables: [],
  needs: [],
  commands: [echo],
  setup() {
    return {
      api: {},
      routes(http) {
        http.get(
          '/probe/forgotten',
          { schema: { operationId: 'probe.forgotten', response: reached } },
          async () => ({
            reached: true,
          }),
        );
        http.get(
          '/probe/declared-public',
          { config: { public: true }, schema: { operationId: 'probe.declaredPublic', response: reached } },
          async () => ({ reached: true }),
        );
      },
    };
  },
});

/** A module that builds nothing and needs the given modules. */
const stub = (name: string, needs: string[] = []): ModuleDefinition =>
  defineModule<string, { name: string }, Record<string, unknown>>({
    name,
    tables: [],
    needs,
    setup: () => ({ api: { name } }),
  });

// The probe's routes go through exactly the registration path of every real module.
const app = useTestApp({}, { modules: [...modules, probeModule] });

describe('setupModules', () => {
  it('hands a module the APIs of the modules it needs, built in list order', async () => {
    let received: unknown;
    const consumer = defineModule<'consumer', object, { provider: { name: string } }>({
      name: 'consumer',
      tables: [],
      needs: ['provider'],
      setup: (_platform, needs) => {
        received = needs;
        return { api: {} };
      },
    });
    const built = await setupModules(app(), [stub('provider'), consumer as ModuleDefinition]);
    expect(built.map(({ name }) => name)).toEqual(['provider', 'consumer']);
    expect(received).toEqual({ provider: { name: 'provider' } });
  });

  it('refuses a module that needs one listed after it, naming both', async () => {
    await expect(setupModules(app(), [stub('presence', ['profiles']), stub('profiles')])).rejects.toThrow(
      'Module presence needs profiles, which must come earlier in the module list.',
    );
  });

  it('refuses a module that needs one missing from the list, naming both', async () => {
    await expect(setupModules(app(), [stub('users'), stub('account', ['ghost'])])).rejects.toThrow(
      'Module account needs ghost, which must come earlier in the module list.',
    );
  });

  it('refuses a module listed twice, naming it', async () => {
    await expect(setupModules(app(), [stub('users'), stub('profiles'), stub('users')])).rejects.toThrow(
      'Module users is listed twice.',
    );
  });
});

describe('an operator command a module declares', () => {
  it('is served on the control channel, run with the CLI as its actor and a handle on the database', async () => {
    const reply = await app().control.execute({ command: 'probe.echo', args: { text: 'hello' } });
    expect(reply).toEqual({
      ok: true,
      exit_code: 0,
      stdout: ['cli said hello; the database answered 1'],
      stderr: [],
    });
  });

  it('stops the start when another module declares its name, naming both modules', async () => {
    const copy = defineModule({
      name: 'copy',
      tables: [],
      needs: [],
      commands: [echo],
      setup: () => ({ api: {} }),
    });
    const { config, db, kv, log } = app();
    await expect(buildApp(config, { db, kv, log, modules: [probeModule, copy] })).rejects.toThrow(
      'The command probe.echo is declared twice, by module probe and by module copy.',
    );
  });
});

describe('a raw route a module registers', () => {
  it('needs a bearer token when it does not declare config.public', async () => {
    const response = await app().http.inject({ method: 'GET', url: '/probe/forgotten' });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('answers a signed-in user when it does not declare config.public', async () => {
    const { access_token } = await registerUser(app());
    const response = await app().http.inject({
      method: 'GET',
      url: '/probe/forgotten',
      headers: bearer(access_token),
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ reached: true });
  });

  it('answers anonymous callers when it declares config.public', async () => {
    const response = await app().http.inject({ method: 'GET', url: '/probe/declared-public' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ reached: true });
  });

  it('is documented with the bearer scheme, or with no security when public', async () => {
    const document = (await app().http.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, { get: { security?: unknown } }>;
    };
    expect(document.paths['/probe/forgotten']?.get.security).toEqual([{ bearerAuth: [] }]);
    expect(document.paths['/probe/declared-public']?.get.security).toEqual([]);
  });
});
