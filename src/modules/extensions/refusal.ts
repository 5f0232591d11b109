import { type ErrorCode, httpStatusByCode } from '../../../protocol/errors.js';
import { AppError } from '../../platform/errors.js';

const CODE = /^[A-Z][A-Z0-9_]*$/;
const MAX_DETAIL = 500;

/**
 * A deliberate refusal an extension throws (`throw api.refuse(403, 'NOT_IN_SEASON', '...')`):
 * the operation does not run and the caller gets this status, code and detail, as the platform's
 * own refusals travel.
 */
export class ExtensionRefusal extends AppError {
  override name = 'ExtensionRefusal';
}

/**
 * `api.refuse`: the refusal to throw, or a TypeError (the extension's fault) when the arguments
 * are not a 4xx status other than 401, a SCREAMING_SNAKE code (a platform code only with its own
 * status) and a detail of 1 to 500 characters.
 */
export function refuse(status: unknown, code: unknown, detail: unknown): ExtensionRefusal {
  if (!Number.isInteger(status) || (status as number) < 400 || (status as number) > 499 || status === 401) {
    throw new TypeError(
      `api.refuse: status must be an integer from 400 to 499 other than 401, got ${String(status)}.`,
    );
  }
  if (typeof code !== 'string' || !CODE.test(code)) {
    throw new TypeError('api.refuse: code must match ^[A-Z][A-Z0-9_]*$.');
  }
  const platformStatus = (httpStatusByCode as Record<string, number | undefined>)[code];
  if (platformStatus !== undefined && platformStatus !== status) {
    throw new TypeError(
      `api.refuse: ${code} is a platform code whose status is ${platformStatus}, not ${status}.`,
    );
  }
  if (typeof detail !== 'string' || detail.length < 1 || detail.length > MAX_DETAIL) {
    throw new TypeError(`api.refuse: detail must be a string of 1 to ${MAX_DETAIL} characters.`);
  }
  // The code travels as given; REST answers with `status`, which the platform's table may not know.
  return new ExtensionRefusal(code as ErrorCode, detail, { status: status as number });
}
