/** The error codes of game servers, with their HTTP status. */
export const gameServerErrors = {
  /**
   * No game server can be started now: the node runs GAMESERVER_MAX_RUNNING already, or Agones has
   * no GameServer to allocate. Retry later.
   */
  GAMESERVER_CAPACITY: 503,
  /**
   * The game server could not be started or did not become ready (it failed, crashed or missed its
   * readiness deadline); the detail says why.
   */
  GAMESERVER_UNAVAILABLE: 503,
};
