/**
 * A starter server extension (docs/extensions.md): a daily login reward, a chat word rule, the
 * result of a match reported by a game server (a win counted on the `match-wins` board), a welcome
 * gift for new accounts, and prizes for a tournament's top 10.
 *
 *   EXTENSIONS=examples/extensions/starter.ts npm run dev
 *
 * Its own settings are environment variables, read once at start like the service's:
 * STARTER_REFUSED_WORDS and STARTER_MASKED_WORDS (comma-separated words).
 */
import { defineExtension, type ExtensionCtx } from '../../src/modules/extensions/define-extension.js';

const DAILY_COINS = 100;
const WELCOME_COINS = 50;
const MATCH_PRIZE = 250;
/** The board a won match counts on, if an admin created it (authoritative, operator incr). */
const WINS_BOARD = 'match-wins';
/** Coins for ranks 1 to 10 at a tournament's end. */
const TOURNAMENT_PRIZES = [1000, 600, 400, 300, 250, 200, 150, 120, 100, 80];

/** The days since the epoch are UTC days: one reward per calendar day wherever the player is. */
const utcDay = (date: Date) => date.toISOString().slice(0, 10);
const dayBefore = (day: string) => utcDay(new Date(Date.parse(day) - 86_400_000));

interface Streak {
  last_day: string;
  streak: number;
}

interface MatchRecord {
  world_id: string;
  server_id: string;
  winner_id: string;
  scores: Record<string, number>;
  transaction_id: string;
}

/**
 * The configured words as one pattern matching any of them as a whole word, in any case: `heck`
 * is caught, `check` is not. Null when none is configured.
 */
function wordsPattern(setting: string | undefined, fallback: string): RegExp | null {
  const words = (setting ?? fallback)
    .split(',')
    .map((word) => word.trim())
    .filter((word) => word.length > 0)
    .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (words.length === 0) return null;
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${words.join('|')})(?![\\p{L}\\p{N}])`, 'giu');
}

const codeOf = (error: unknown) => (error as { code?: unknown } | null)?.code;

export default defineExtension({
  name: 'starter',
  setup(api) {
    const refusedWords = wordsPattern(process.env.STARTER_REFUSED_WORDS, 'freecoins');
    const maskedWords = wordsPattern(process.env.STARTER_MASKED_WORDS, 'heck');

    /**
     * Today's streak of the user, recorded once per day: a read-modify-write under the record's
     * version, retried when another call wrote in between (the same player on two devices), so no
     * update is lost. The loop cannot outlive the call: past its deadline ctx.storage throws.
     */
    async function recordStreak(ctx: ExtensionCtx, userId: string, today: string): Promise<number> {
      for (;;) {
        const current = await ctx.storage.get('daily', 'streak', userId);
        const last = current?.value as Streak | undefined;
        if (last?.last_day === today) return last.streak;
        const streak = last?.last_day === dayBefore(today) ? last.streak + 1 : 1;
        try {
          const value: Streak = { last_day: today, streak };
          // Version 0: only if there is no record yet.
          await ctx.storage.put('daily', 'streak', value, {
            user_id: userId,
            version: current?.version ?? 0,
          });
          return streak;
        } catch (error) {
          if (!(error instanceof api.StorageConflictError)) throw error;
        }
      }
    }

    // (a) The daily login reward. The grant's idempotency key names the user and the day, so a
    // second claim that day (a retry, a double tap, another node) moves no coins; the streak is
    // recorded after the grant and is itself once per day, so a claim retried after a crash
    // between the two finishes the job.
    api.rpc('daily.claim', { auth: 'user' }, async (ctx) => {
      // Never null in a 'user' rpc.
      const userId = (ctx.caller as NonNullable<typeof ctx.caller>).user_id;
      const today = utcDay(new Date());
      const grant = await ctx.economy
        .grant({
          user_id: userId,
          amount: DAILY_COINS,
          reason: 'Daily login reward',
          idempotency_key: `daily:${userId}:${today}`,
        })
        .catch((error: unknown) => {
          // The same claim is running right now (two devices at once): the player taps again.
          if (codeOf(error) === 'IDEMPOTENCY_KEY_IN_USE') {
            throw api.refuse(
              409,
              'CLAIM_IN_PROGRESS',
              'Your reward is being granted; try again in a moment.',
            );
          }
          throw error;
        });
      const streak = await recordStreak(ctx, userId, today);
      // On a replay, `balance` is the one the day's first claim left.
      return { granted: !grant.replayed, balance: grant.balance, streak };
    });

    // (b) The chat word rule, on every operation that sends a chat message. The socket's chat.send
    // frame and REST's chat.sendToWorld / chat.sendToRoom are separate operations: each is hooked.
    const sends = [
      'dm.send',
      'chat.send',
      'chat.sendToWorld',
      'chat.sendToRoom',
      'chat.sendToGroup',
      'chat.sendToParty',
    ] as const;
    for (const operation of sends) {
      api.before(operation, (_ctx, input) => {
        if (refusedWords && input.body.search(refusedWords) >= 0) {
          throw api.refuse(422, 'WORD_NOT_ALLOWED', 'Your message contains a word that is not allowed here.');
        }
        if (!maskedWords) return undefined;
        // As many stars as characters, so a masked body is never longer than the one sent.
        const body = input.body.replace(maskedWords, (word) => '*'.repeat(word.length));
        // A replacement input: validated again against the operation's schema, then stored.
        return body === input.body ? undefined : { ...input, body };
      });
    }

    // (c) A match result, from the game server that ran the match (its per-spawn token): the
    // winner gets the prize once per match, whatever the retries, and the match is kept.
    api.rpc(
      'match.result',
      {
        auth: 'server',
        input: api.z
          .object({
            // Visible ASCII: it goes into the grant's idempotency key.
            match_id: api.z.string().regex(/^[\x21-\x7e]{1,100}$/),
            winner_id: api.z.string(),
            scores: api.z.record(api.z.string(), api.z.number().int()),
          })
          .strict(),
      },
      async (ctx, { match_id, winner_id, scores }) => {
        // Never null in a 'server' rpc: the game server whose token called.
        const server = ctx.server as NonNullable<typeof ctx.server>;
        const grant = await ctx.economy
          .grant({
            user_id: winner_id,
            amount: MATCH_PRIZE,
            reason: `Won match ${match_id}`,
            idempotency_key: `match:${match_id}`,
          })
          .catch((error: unknown) => {
            if (codeOf(error) === 'NOT_FOUND')
              throw api.refuse(422, 'UNKNOWN_PLAYER', 'winner_id names no account.');
            // The key was used with another winner: the match was already reported otherwise.
            if (codeOf(error) === 'IDEMPOTENCY_KEY_REUSED') {
              throw api.refuse(
                409,
                'MATCH_ALREADY_REPORTED',
                `Match ${match_id} was reported with another winner.`,
              );
            }
            throw error;
          });
        const record: MatchRecord = {
          world_id: server.world_id,
          server_id: server.server_id,
          winner_id,
          scores,
          transaction_id: grant.transaction_id,
        };
        let firstReport = true;
        try {
          // Version 0: the first report of the match is kept; a retried report finds it there.
          await ctx.storage.put('matches', match_id, record, { version: 0 });
        } catch (error) {
          if (!(error instanceof api.StorageConflictError)) throw error;
          firstReport = false;
        }
        // One win on the authoritative wins board (an `incr` board an admin created), per match.
        if (firstReport)
          await ctx.leaderboards
            .submit({ leaderboard_id: WINS_BOARD, user_id: winner_id, score: 1 })
            .catch((error: unknown) => {
              if (codeOf(error) !== 'NOT_FOUND') throw error;
            });
        return { match_id, winner_id, prize: grant.amount, replayed: grant.replayed };
      },
    );

    // Players read a match's result back, e.g. for the end-of-match screen.
    api.rpc(
      'match.get',
      { input: api.z.object({ match_id: api.z.string().min(1).max(128) }).strict() },
      async (ctx, { match_id }) => (await ctx.storage.get('matches', match_id))?.value ?? null,
    );

    // (e) Tournament prizes: the top 10 at a tournament's end, once each (the key names the
    // tournament and the player, so a second delivery of the event moves nothing).
    api.on('tournament.ended', async (ctx, event) => {
      for (const record of event.data.standings.slice(0, TOURNAMENT_PRIZES.length)) {
        await ctx.economy
          .grant({
            user_id: record.user_id,
            amount: TOURNAMENT_PRIZES[record.rank - 1] ?? 0,
            reason: `Rank ${record.rank} in tournament ${event.data.tournament_id}`,
            idempotency_key: `tournament:${event.data.tournament_id}:${record.user_id}`,
          })
          .catch((error: unknown) => {
            // The account was deleted since: nothing to give.
            if (codeOf(error) !== 'NOT_FOUND') throw error;
          });
      }
    });

    // (d) A welcome gift. Events arrive at least once (a node may stop after granting and before
    // it marked the event handled), so the grant's key is the event's id: a second run moves nothing.
    api.on('user.registered', async (ctx, event) => {
      try {
        await ctx.economy.grant({
          user_id: event.data.user_id,
          amount: WELCOME_COINS,
          reason: 'Welcome gift',
          idempotency_key: `welcome:${event.id}`,
        });
      } catch (error) {
        // The account was deleted before the gift arrived: nothing to do, and nothing to retry.
        if (codeOf(error) !== 'NOT_FOUND') throw error;
      }
    });
  },
});
