import type { z } from 'zod';
import { type ClientFrame, CloseCode } from '../../../protocol/frames.js';
import type { SetupGate } from '../../../protocol/operation.js';
import type { PrincipalKind } from '../auth/principal.js';
import { AppError, asAppError, ErrorCode, toErrorFrame } from '../errors.js';
import type { InFlight } from '../in-flight.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { rateLimited } from '../rate-limit.js';
import type { Connection } from './connection.js';
import { FrameDecoder, FrameError } from './frame-decoder.js';
import { SetupAdmission } from './setup-admission.js';

/** A frame handler gets the validated payload, returns the ack payload and throws AppError to refuse. */
export type FrameHandler<Payload> = (
  connection: Connection,
  payload: Payload,
  frame: ClientFrame,
) => unknown | Promise<unknown>;

/** Who may send a frame: any connection (authenticated or not), or those speaking for these kinds. */
export type Admission = 'anyone' | readonly PrincipalKind[];

interface Registration {
  payload: z.ZodType;
  handler: FrameHandler<unknown>;
  admits: Admission;
  /** The gate of the node's SetupAdmission it waits its turn at (the operation is declared `setup`). */
  setup: SetupGate | undefined;
  /** Its frames' counter, looked up once. */
  received: { inc(): void };
}

export interface HandleOptions {
  admits?: Admission;
  setup?: SetupGate | undefined;
}

export interface DispatchDeps {
  log: Logger;
  metrics: Metrics;
  maxFrameBytes: number;
  maxFramesPerSecond: number;
  /** Setup frames run at once at each gate (WS_AUTH_CONCURRENCY, WS_SETUP_CONCURRENCY). */
  setupConcurrency: Record<SetupGate, number>;
  maxSetupWaiting: number;
  /** The node's running work, which shutdown waits for: each asynchronous handler counts in it. */
  inFlight: InFlight;
}

/** A client sending this many times its frame allowance within one second is disconnected. */
const FLOOD_CLOSE_FACTOR = 3;

/** Returned by handlers that answer with their own frame (like ping's pong) instead of an ack. */
export const NO_ACK = Symbol('no-ack');

/**
 * Turns each received message into a handler call and its answer: decoding, the frame rate limit,
 * the handler table, the admission of the connection's principal, payload validation, then an ack
 * or an error frame. Counts the handlers still running (whether or not their connection is still
 * open) so shutdown can wait for them.
 */
export class FrameDispatcher {
  private readonly handlers = new Map<string, Registration>();
  private readonly decoder: FrameDecoder;
  private readonly setupAdmission: SetupAdmission;

  constructor(private readonly deps: DispatchDeps) {
    this.decoder = new FrameDecoder(deps.maxFrameBytes);
    this.setupAdmission = new SetupAdmission(deps.setupConcurrency, deps.maxSetupWaiting);
  }

  /**
   * Registers the handler of a frame type; its payload is validated against `payload` first, and
   * by default only a user's connection may send it; a `setup` frame waits its turn at its gate
   * (SetupAdmission).
   * Modules register theirs through their operations (platform/operations.ts) rather than here.
   */
  handle<Payload>(
    type: string,
    payload: z.ZodType<Payload>,
    handler: FrameHandler<Payload>,
    options: HandleOptions = {},
  ): void {
    if (this.handlers.has(type)) throw new Error(`Frame type ${type} already has a handler.`);
    this.handlers.set(type, {
      payload,
      handler: handler as FrameHandler<unknown>,
      admits: options.admits ?? ['user'],
      setup: options.setup,
      received: this.deps.metrics.wsFramesReceived.child({ type }),
    });
  }

  /** The frame types with a handler, for the conformance test of the protocol catalogue. */
  handledTypes(): string[] {
    return [...this.handlers.keys()];
  }

  receive(connection: Connection, message: ArrayBuffer, isBinary: boolean): void {
    // Decoding happens first and synchronously: uWS reclaims `message` when this callback returns.
    let frame: ClientFrame | undefined;
    let failure: FrameError | undefined;
    try {
      frame = this.decoder.decode(message, isBinary);
    } catch (error) {
      failure = error instanceof FrameError ? error : new FrameError(asAppError(error), undefined);
    }
    const now = Date.now();
    const count = connection.countFrame(now);
    if (count > this.deps.maxFramesPerSecond) {
      this.onFlood(connection, count, connection.msLeftInWindow(now), frame?.id ?? failure?.requestId);
      return;
    }
    if (frame) this.dispatch(connection, frame);
    else if (failure) {
      this.deps.metrics.wsFramesReceived.inc({ type: 'invalid' });
      this.sendError(connection, failure.cause, failure.requestId);
    }
  }

  private onFlood(
    connection: Connection,
    count: number,
    msLeft: number,
    requestId: number | undefined,
  ): void {
    const allowance = this.deps.maxFramesPerSecond;
    if (count > allowance * FLOOD_CLOSE_FACTOR) {
      this.deps.metrics.wsClosedByServer.inc({ reason: 'flood' });
      connection.close(CloseCode.FLOOD, 'too many frames');
      return;
    }
    // One error per window is enough to tell a fire-and-forget sender; requests still get theirs.
    const firstRejection = count === allowance + 1;
    if (requestId === undefined && !firstRejection) return;
    const error = rateLimited(`At most ${allowance} frames per second; this frame was dropped.`, msLeft);
    this.sendError(connection, error, requestId);
  }

  private dispatch(connection: Connection, frame: ClientFrame): void {
    const registration = this.handlers.get(frame.t);
    if (!registration) {
      this.deps.metrics.wsFramesReceived.inc({ type: 'unknown' });
      this.sendError(
        connection,
        new AppError(ErrorCode.UNKNOWN_FRAME_TYPE, `Unknown frame type ${frame.t}.`),
        frame.id,
      );
      return;
    }
    registration.received.inc();
    const { admits } = registration;
    const principal = connection.principal;
    if (admits !== 'anyone' && !(principal && admits.includes(principal.kind))) {
      // A socket authenticated as another kind of caller (a game server's) is known, not admitted.
      const refusal = principal
        ? new AppError(ErrorCode.FORBIDDEN, `A ${principal.kind}'s socket may not send ${frame.t}.`)
        : new AppError(ErrorCode.UNAUTHENTICATED, 'Send an auth frame first.');
      this.sendError(connection, refusal, frame.id);
      return;
    }
    const parsed = registration.payload.safeParse(frame.d);
    if (!parsed.success) {
      const errors = parsed.error.issues.map((i) => ({
        path: ['d', ...i.path].join('.'),
        message: i.message,
      }));
      this.sendError(
        connection,
        new AppError(ErrorCode.VALIDATION_FAILED, `The ${frame.t} frame's payload is invalid.`, { errors }),
        frame.id,
      );
      return;
    }
    const invoke = () => registration.handler(connection, parsed.data, frame);
    const gate = registration.setup;
    if (!gate) this.run(connection, frame, invoke);
    // A connection that closed while its frame waited needs no answer.
    else
      this.run(connection, frame, () =>
        this.setupAdmission.run(gate, () => (connection.closed ? NO_ACK : invoke())),
      );
  }

  /**
   * Runs a handler, answering with an ack (when the frame had an id) or an error frame. A handler
   * that answers at once is answered within uWS's message callback, which corks its writes; one
   * that answers later is answered through the connection's queue (Connection.sendSoon), written
   * with the other answers and events of the same event-loop turn.
   */
  private run(connection: Connection, frame: ClientFrame, invoke: () => unknown): void {
    let result: unknown;
    try {
      result = invoke();
    } catch (error) {
      this.fail(connection, frame, error, false);
      return;
    }
    if (!(result instanceof Promise)) {
      this.reply(connection, frame, result, false);
      return;
    }
    this.deps.inFlight.track(
      result.then(
        (answer) => this.reply(connection, frame, answer, true),
        (error) => this.fail(connection, frame, error, true),
      ),
      () => `frame ${frame.t}`,
    );
  }

  private reply(connection: Connection, frame: ClientFrame, result: unknown, later: boolean): void {
    if (result === NO_ACK || frame.id === undefined) return;
    const ack = { t: 'ack', id: frame.id, d: result };
    if (later) connection.sendSoon(ack);
    else connection.send(ack);
  }

  private fail(connection: Connection, frame: ClientFrame, error: unknown, later: boolean): void {
    // A lost dependency is logged once at warn by asAppError, with its reason only.
    const appError = asAppError(error, this.deps.log);
    if (appError.code === ErrorCode.INTERNAL)
      this.deps.log.error({ err: error, frame: frame.t }, 'frame handler failed');
    this.sendError(connection, appError, frame.id, later);
  }

  private sendError(connection: Connection, error: AppError, requestId?: number, later = false): void {
    this.deps.metrics.wsErrorFrames.inc({ code: error.code });
    const errorFrame = toErrorFrame(error, requestId);
    if (later) connection.sendSoon(errorFrame);
    else connection.send(errorFrame);
  }
}
