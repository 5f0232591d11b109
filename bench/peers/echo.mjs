/** The peers bench's extension: the echo rpc, answering its input (Nakama's side: bench/peers/nakama-module). */
export default {
  name: 'bench-echo',
  setup(api) {
    api.rpc('echo', { auth: 'user' }, (_ctx, input) => input);
  },
};
