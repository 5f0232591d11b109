/**
 * The extensions bench's loaded-but-elsewhere extension: hooks on operations the bench does not
 * call (so `GET /api/users/me` and `dm.send` keep the path of an operation with no hook) and the
 * echo rpc measured beside them.
 */
export default {
  name: 'bench-elsewhere',
  setup(api) {
    api.before('profile.update', () => {});
    api.after('groups.join', () => {});
    api.before('chat.sendToWorld', () => {});
    api.rpc('echo', { auth: 'user' }, (_ctx, input) => input);
  },
};
