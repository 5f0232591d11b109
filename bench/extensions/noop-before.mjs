/** The extensions bench's one no-op before hook on each measured operation: the hook path's own cost. */
export default {
  name: 'bench-noop-before',
  setup(api) {
    api.before('users.me', () => {});
    api.before('dm.send', () => {});
  },
};
