/** Progress lines on stdout, prefixed so they stand apart from the servers' own logs on stderr. */
export const progress = (message: string) => console.log(`[bench:peers] ${message}`);
