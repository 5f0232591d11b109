// The smallest server extension (docs/extensions.md): plain JavaScript, no import from the
// project, so it may live anywhere. Load it with EXTENSIONS=/path/to/hello.mjs and call it:
//
//   curl -X POST localhost:8080/api/rpc/hello -H 'content-type: application/json' -d '{"name":"Ada"}'
//   -> {"result":{"greeting":"Hello, Ada!"}}
export default {
  name: 'hello',
  setup(api) {
    // api.z is the service's zod: the input is validated (422 naming the field) before the handler runs.
    const input = api.z.object({ name: api.z.string().min(1).max(50) }).optional();
    // 'public': anonymous callers too; ctx.caller is set when the call carried a valid token.
    api.rpc('hello', { auth: 'public', input }, (ctx, input) => {
      const name = input?.name ?? ctx.caller?.username ?? 'stranger';
      ctx.log.info({ greeted: name }, 'greeted a caller');
      return { greeting: `Hello, ${name}!` };
    });
  },
};
