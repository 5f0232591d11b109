import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EXTENSION_NAME as NAME } from '../../../protocol/audit.js';
import { StartupError } from '../../platform/startup-error.js';
import { extensionApi, type Registry } from './registry.js';

/**
 * Loads the EXTENSIONS modules in order, each `setup` awaited before the next module is imported,
 * into `registry`. Anything wrong stops the start with a StartupError naming the module's path
 * (and its name when known) and the reason, before anything listens.
 */
export async function loadExtensions(paths: readonly string[], registry: Registry): Promise<void> {
  for (const path of paths) {
    const absolute = resolve(path);
    const refused = (reason: string, name?: string) =>
      new StartupError(`Extension ${path}${name ? ` (${name})` : ''} refused: ${reason}`);
    let loaded: { default?: unknown };
    try {
      loaded = await import(pathToFileURL(absolute).href);
    } catch (error) {
      throw refused(`it cannot be loaded: ${(error as Error).message}`);
    }
    const definition = loaded.default as { name?: unknown; setup?: unknown } | undefined;
    if (typeof definition !== 'object' || definition === null) {
      throw refused('it has no default export of an object {name, setup(api)}.');
    }
    const { name, setup } = definition;
    if (typeof name !== 'string' || !NAME.test(name)) {
      throw refused(`its name ${JSON.stringify(name)} must match ${NAME.source}.`);
    }
    if (registry.extensions.some((earlier) => earlier.name === name)) {
      throw refused(`the name ${name} is already taken by an extension loaded before it.`, name);
    }
    if (typeof setup !== 'function') throw refused('its setup is not a function.', name);
    const { api, close } = extensionApi(name, registry);
    try {
      await setup.call(definition, api);
    } catch (error) {
      throw refused(`its setup failed: ${(error as Error)?.message ?? String(error)}`, name);
    } finally {
      close();
    }
    registry.extensions.push({ name, path: absolute });
  }
}
