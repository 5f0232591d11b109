/** The error codes of registration, login and sessions, with their HTTP status. */
export const authErrors = {
  /** Registration without `confirm_18_plus: true`: the service is for adults only. */
  AGE_GATE: 422,
  /** Registration without `accept_terms: true`. */
  TERMS_NOT_ACCEPTED: 422,
  /** Registration with a username another account has (compared case-insensitively). */
  USERNAME_TAKEN: 409,
  /** Registration with an email address another account has. */
  EMAIL_TAKEN: 409,
  /** Wrong username or password; deliberately the same for both. */
  INVALID_CREDENTIALS: 401,
  /** A refresh token that is unknown, expired, revoked or already used. */
  INVALID_REFRESH_TOKEN: 401,
  /** A password re-check (for example before deleting the account) failed. */
  PASSWORD_INCORRECT: 403,
  /** Login or refresh of a suspended account; the body carries `until` (null: until an admin lifts it). */
  ACCOUNT_SUSPENDED: 403,
};
