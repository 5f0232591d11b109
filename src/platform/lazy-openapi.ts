import { createRequire } from 'node:module';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance, RouteOptions } from 'fastify';

/**
 * The OpenAPI document's builder (@fastify/swagger), loaded on the document's first request.
 * Registered at start, the plugin and what it brings (yaml, json-schema-resolver) held about
 * 1 MiB of heap in every process for a document clients fetch now and then (docs/performance.md,
 * "Process memory and start time"). The service records what the plugin would record, each
 * route's options and each plugin instance, with hooks of its own; the first call of `swagger()`
 * loads the plugin, hands it that record through the same hooks, and from then on it answers as
 * it would have registered (the same options, so the same document and the same cache).
 */

type SwaggerFunction = (options?: { yaml?: boolean }) => unknown;
type Hook = (...args: never[]) => unknown;

/** The plugin's own function (without fastify-plugin's wrapper), loaded once, synchronously: it is CommonJS. */
function loadPlugin(): (instance: unknown, options: unknown, done: (err?: Error) => void) => void {
  const require = createRequire(import.meta.url);
  return (require('@fastify/swagger') as { fastifySwagger: ReturnType<typeof loadPlugin> }).fastifySwagger;
}

/**
 * Decorates `app.swagger()` as @fastify/swagger does, with the plugin loaded on the first call.
 * Call it where the plugin would be registered: routes added before it are not recorded.
 */
export function registerLazyOpenApi(app: FastifyInstance, options: FastifyDynamicSwaggerOptions): void {
  const routes: RouteOptions[] = [];
  const instances: FastifyInstance[] = [];
  let ready = false;
  app.addHook('onRoute', (route) => {
    routes.push(route);
  });
  app.addHook('onRegister', (instance) => {
    instances.push(instance);
  });
  app.addHook('onReady', (done) => {
    ready = true;
    done();
  });
  let swagger: SwaggerFunction | undefined;
  const documentOf: SwaggerFunction = (documentOptions) => {
    // As the plugin: its references are resolved against the schemas known once the app is ready.
    if (!ready) throw new Error('.swagger() must be called after .ready()');
    swagger ??= replayed(app, options, routes, instances);
    return swagger(documentOptions);
  };
  // Typed by @fastify/swagger's augmentation with the plugin's own overloads; this one answers the same.
  app.decorate('swagger', documentOf as never);
}

/**
 * Runs the plugin on a stand-in for the app that has only what the plugin uses (addHook, decorate,
 * getSchemas), then gives its hooks what the app's own recorded, in the order the app saw them.
 */
function replayed(
  app: FastifyInstance,
  options: FastifyDynamicSwaggerOptions,
  routes: readonly RouteOptions[],
  instances: readonly FastifyInstance[],
): SwaggerFunction {
  const hooks = new Map<string, Hook>();
  let swagger: SwaggerFunction | undefined;
  const standIn = {
    addHook(name: string, hook: Hook) {
      if (hooks.has(name)) throw new Error(`@fastify/swagger added a second ${name} hook`);
      hooks.set(name, hook);
    },
    decorate(_name: string, value: SwaggerFunction) {
      swagger = value;
    },
    getSchemas: () => app.getSchemas(),
  };
  let failed: Error | undefined;
  loadPlugin()(standIn, { ...options }, (err) => {
    failed = err;
  });
  if (failed) throw failed;
  const hook = (name: string) => {
    const found = hooks.get(name);
    if (!found) throw new Error(`@fastify/swagger added no ${name} hook`);
    return found as (...args: unknown[]) => unknown;
  };
  for (const route of routes) hook('onRoute')(route);
  for (const instance of instances) void hook('onRegister')(instance);
  hook('onReady')(() => {});
  if (!swagger) throw new Error('@fastify/swagger decorated no swagger()');
  return swagger;
}
