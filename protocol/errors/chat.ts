/** The error codes of chat, with their HTTP status. */
export const chatErrors = {
  /** The text filter refused a message (DM_FILTER_MODE=reject); nothing was stored. */
  MESSAGE_REJECTED: 422,
};
