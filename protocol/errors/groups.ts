/** The error codes of groups, with their HTTP status. */
export const groupErrors = {
  /** The group has GROUP_MAX_MEMBERS members: a join or an approval waits for someone to leave. */
  GROUP_FULL: 409,
};
