import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { DOCS_PATH } from './openapi.js';

/**
 * The API reference page (Swagger UI, under DOCS_PATH), loaded on its first request. Registered
 * at start, @fastify/swagger-ui and what it brings (@fastify/static, glob, yaml) held about 1.3 MiB
 * of heap in every process for a page operators open now and then (docs/performance.md, "Process
 * memory and start time"). The service registers the paths the plugin serves, hidden from the
 * OpenAPI document as the plugin's are; the first request builds a small Fastify instance with
 * the plugin, and every request is answered by it through `inject`.
 */

/** The paths @fastify/swagger-ui serves under its prefix (its lib/routes.js, without theme or baseDir). */
const UI_PATHS = [
  '',
  '/',
  '/static/index.html',
  '/static/swagger-initializer.js',
  '/json',
  '/yaml',
  '/static/*',
];

/** Connection headers of the inner answer, which the service's own connection sets. */
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date', 'content-length']);

/** Set by the inner instance on its 404, so the service answers it with its own not-found answer. */
const NOT_FOUND_MARK = 'x-atrium-docs-not-found';

type DocumentOf = (options?: { yaml?: boolean }) => unknown;

export function registerDocsPage(app: FastifyInstance, documentOf: DocumentOf): void {
  let ui: Promise<FastifyInstance> | undefined;
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    ui ??= uiInstance(documentOf).catch((error: unknown) => {
      ui = undefined; // a later request tries again
      throw error;
    });
    const answer = await (await ui).inject({
      // Fastify answers HEAD with the GET route's headers and no body: the outer route does that.
      method: request.method === 'HEAD' ? 'GET' : request.method,
      url: request.url,
      headers: request.headers,
    });
    if (answer.statusCode === 404 && answer.headers[NOT_FOUND_MARK]) return reply.callNotFound();
    reply.code(answer.statusCode);
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !NOT_FORWARDED.has(name)) reply.header(name, value);
    }
    return reply.send(answer.rawPayload);
  };
  for (const path of UI_PATHS) {
    app.route({ method: 'GET', url: `${DOCS_PATH}${path}`, schema: { hide: true }, handler });
  }
  app.addHook('onClose', async () => {
    const built = await ui?.catch(() => undefined);
    await built?.close();
  });
}

/** The plugin on an instance of its own, reading the service's document through `swagger()`. */
async function uiInstance(documentOf: DocumentOf): Promise<FastifyInstance> {
  const { default: swaggerUi } = await import('@fastify/swagger-ui');
  const inner = Fastify({ logger: false });
  inner.setNotFoundHandler((_request, reply) => {
    reply.code(404).header(NOT_FOUND_MARK, '1').send();
  });
  await inner.register(swaggerDocument(documentOf));
  await inner.register(swaggerUi, { routePrefix: DOCS_PATH });
  await inner.ready();
  return inner;
}

/**
 * Stands in for @fastify/swagger on the inner instance (the UI plugin depends on a plugin of that
 * name): it decorates `swagger()` with the service's document. The symbols are Fastify's plugin
 * metadata, as fastify-plugin sets them: no encapsulation, and the name dependencies look for.
 */
function swaggerDocument(documentOf: DocumentOf) {
  const plugin = (instance: FastifyInstance, _options: unknown, done: () => void) => {
    // Typed by @fastify/swagger's augmentation as the plugin's own overloads; this one answers the same.
    instance.decorate('swagger', documentOf as never);
    done();
  };
  return Object.assign(plugin, {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('plugin-meta')]: { name: '@fastify/swagger', fastify: '5.x' },
  });
}
