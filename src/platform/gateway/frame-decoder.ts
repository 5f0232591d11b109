import { Decoder } from '@msgpack/msgpack';
import { MAX_DOCUMENT_DEPTH } from '../../../protocol/documents.js';
import { type ClientFrame, clientFrameSchema, REQUEST_ID_MAX } from '../../../protocol/frames.js';
import { AppError, ErrorCode } from '../errors.js';
import { MsgpackBounds } from './msgpack-bounds.js';

/** The envelope map is one level; a payload may carry a user document of MAX_DOCUMENT_DEPTH levels. */
export const MAX_FRAME_DEPTH = MAX_DOCUMENT_DEPTH + 1;

/** A decoding failure that still knows the request id to echo, when the frame had a usable one. */
export class FrameError extends Error {
  constructor(
    override readonly cause: AppError,
    readonly requestId: number | undefined,
  ) {
    super(cause.message);
  }
}

/**
 * Turns one WebSocket message into a validated envelope. Everything a client can send wrong
 * (text frames, oversized frames, bytes that are not msgpack, truncated maps, a map of the wrong
 * shape) becomes a FrameError, which the gateway answers with an error frame.
 */
export class FrameDecoder {
  private readonly decoder: Decoder;
  private readonly bounds = new MsgpackBounds(MAX_FRAME_DEPTH);

  constructor(private readonly maxFrameBytes: number) {
    this.decoder = new Decoder({
      maxStrLength: maxFrameBytes,
      maxBinLength: maxFrameBytes,
      maxArrayLength: maxFrameBytes,
      maxMapLength: maxFrameBytes,
    });
  }

  decode(message: ArrayBuffer, isBinary: boolean): ClientFrame {
    if (!isBinary) throw frameError(ErrorCode.MALFORMED_REQUEST, 'Frames must be binary msgpack, not text.');
    if (message.byteLength > this.maxFrameBytes) {
      throw frameError(
        ErrorCode.FRAME_TOO_LARGE,
        `The frame is ${message.byteLength} bytes; the limit is ${this.maxFrameBytes}.`,
      );
    }
    const bytes = new Uint8Array(message);
    const problem = this.bounds.check(bytes);
    if (problem) {
      throw frameError(
        ErrorCode.MALFORMED_REQUEST,
        `The frame is not valid msgpack at byte ${problem.offset}: ${problem.reason}.`,
      );
    }
    let decoded: unknown;
    try {
      decoded = this.decoder.decode(bytes);
    } catch {
      throw frameError(ErrorCode.MALFORMED_REQUEST, 'The frame is not valid msgpack.');
    }
    const parsed = clientFrameSchema.safeParse(decoded);
    if (parsed.success) return parsed.data;
    const id = (decoded as { id?: unknown } | null)?.id;
    // Only an id a valid frame could carry is echoed; anything else is refused without one.
    const requestId =
      typeof id === 'number' && Number.isInteger(id) && id >= 0 && id <= REQUEST_ID_MAX ? id : undefined;
    const errors = parsed.error.issues.map((issue) => ({
      path: issue.path.join('.'),
      message: issue.message,
    }));
    throw new FrameError(
      new AppError(
        ErrorCode.MALFORMED_REQUEST,
        'A frame is a msgpack map {t: string, id?: uint32, d?: any}.',
        {
          errors,
        },
      ),
      requestId,
    );
  }
}

function frameError(code: ErrorCode, message: string): FrameError {
  return new FrameError(new AppError(code, message), undefined);
}
