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
  /** The friend to join is offline, or on no starting or ready server. */
  NOT_IN_WORLD: 409,
  /** The server named has no room for the caller (GAMESERVER_MAX_PLAYERS). */
  SERVER_FULL: 409,
  /**
   * The server's access refuses the caller (friends or invite only, or a block with its owner), or
   * the caller may not read the world of the friend they join.
   */
  INSTANCE_RESTRICTED: 403,
};
