import type { Ctx } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { type BoardRow, findBoard } from './boards.repository.js';
import { StandingsGone } from './standings.js';

/** The most boards a node keeps copies of. */
const COPIES_MAX = 10_000;

export const notFound = (id: string) => new AppError(ErrorCode.NOT_FOUND, `No leaderboard ${id}.`);

/**
 * This node's copies of the boards it read, by id. A board never changes after its creation, so
 * a page or a submission runs no statement for it: its own statement (guarded.repository.ts)
 * answers StandingsGone when the board was deleted, on any node, since it was copied.
 */
export class BoardCopies {
  private readonly copies = new Map<string, BoardRow>();

  /** `forgotten` is told of each board incarnation dropped, for what is kept beside it. */
  constructor(private readonly forgotten: (board: BoardRow) => void) {}

  /**
   * Runs `work` on the board: the copy when there is one, else the board's row. A refusal that came
   * from a copy is answered only once the row confirms the copy: with no row the board is gone (404,
   * as if it had been read first); with another incarnation under the id, the work runs again on it.
   */
  async with<T>(ctx: Ctx, id: string, work: (board: BoardRow) => Promise<T>): Promise<T> {
    const copy = this.copies.get(id);
    if (copy) {
      try {
        return await work(copy);
      } catch (error) {
        if (!(error instanceof AppError || error instanceof StandingsGone)) throw error;
        const board = await this.read(ctx, id);
        if (board.ref === copy.ref) throw error instanceof StandingsGone ? notFound(id) : error;
        return this.withRow(work, board);
      }
    }
    return this.withRow(work, await this.read(ctx, id));
  }

  /** The board's row, now (404 without one); the copy follows it. */
  async read(ctx: Ctx, id: string): Promise<BoardRow> {
    const board = await findBoard(ctx.data, id);
    const copy = this.copies.get(id);
    if (copy && copy.ref !== board?.ref) this.forget(copy);
    if (!board) throw notFound(id);
    this.remember(board);
    return board;
  }

  remember(board: BoardRow): void {
    if (this.copies.size >= COPIES_MAX && !this.copies.has(board.id)) this.copies.clear();
    this.copies.set(board.id, board);
  }

  forget(board: BoardRow): void {
    if (this.copies.get(board.id)?.ref === board.ref) this.copies.delete(board.id);
    this.forgotten(board);
  }

  private async withRow<T>(work: (board: BoardRow) => Promise<T>, board: BoardRow): Promise<T> {
    try {
      return await work(board);
    } catch (error) {
      if (!(error instanceof StandingsGone)) throw error;
      this.forget(board);
      throw notFound(board.id);
    }
  }
}
