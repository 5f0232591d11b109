/** The error codes of parties, with their HTTP status. */
export const partyErrors = {
  /** The caller is a member of a party already (the same one included): they leave it first. */
  ALREADY_IN_PARTY: 409,
  /** The party has max_size members: a join waits for someone to leave. */
  PARTY_FULL: 409,
  /** The caller is in no party, and the operation acts on their party (joining a world together). */
  NOT_IN_PARTY: 409,
  /**
   * A party join would split the party: more members to place than a server holds
   * (GAMESERVER_MAX_PLAYERS), or the server named has no room for all of them.
   */
  NO_ROOM_FOR_PARTY: 409,
};
