/**
 * The comm's messages checked against `jaxviz/schema/messages.json` before use (the
 * validators are generated from it: `messagechecks.ts`). What does not match is dropped
 * with a console warning: a kernel of another jaxviz version, or a bug, never breaks the
 * panel.
 */

import { validateEvent, validateFrontendMessage, validateKernelMessage } from './messagechecks';
import type { Event, FrontendMessage, KernelMessage } from './messages';

interface SchemaError {
  instancePath: string;
  keyword: string;
  message?: string;
}

interface Validator {
  (data: unknown): boolean;
  errors?: SchemaError[] | null;
}

/** The schema error, in a few words ("/payload/count: must be integer"): of the kind of
 * message it claims to be (the other kinds' errors say only that its type is not theirs). */
function firstError(check: Validator): string {
  const errors = check.errors ?? [];
  const isOtherKind = (e: SchemaError) =>
    e.keyword === 'oneOf' || (e.keyword === 'const' && /^\/(type|kind)$/.test(e.instancePath));
  const error = errors.find(e => !isOtherKind(e)) ?? errors[0];
  return error ? `${error.instancePath || '(message)'}: ${error.message ?? 'invalid'}` : 'invalid';
}

function typeOf(data: unknown): unknown {
  return data && typeof data === 'object' ? (data as { type?: unknown }).type : undefined;
}

/** The message when it is one the kernel may send, else null (warned, but for event
 * batches: `checkedEvents` keeps their valid events and warns about the rest). */
export function checkedKernelMessage(data: unknown): KernelMessage | null {
  const check = validateKernelMessage as Validator;
  if (check(data)) {
    return data as KernelMessage;
  }
  const type = typeOf(data);
  if (type !== 'event' && type !== 'events') {
    console.warn(
      `jaxviz: dropped a message from the kernel that does not match the schema (${firstError(check)})`,
      data
    );
  }
  return null;
}

/** The events of an `event` or `events` message that match the schema; the others are
 * dropped with a warning. */
export function checkedEvents(data: unknown): Event[] {
  const type = typeOf(data);
  const events: unknown[] =
    type === 'event' ? [data] : type === 'events' ? ((data as { events?: unknown }).events as unknown[]) : [];
  if (!Array.isArray(events)) {
    console.warn('jaxviz: dropped an events message without a list of events', data);
    return [];
  }
  const check = validateEvent as Validator;
  const kept: Event[] = [];
  for (const event of events) {
    if (check(event)) {
      kept.push(event as Event);
    } else {
      console.warn(`jaxviz: dropped an event that does not match the schema (${firstError(check)})`, event);
    }
  }
  return kept;
}

/** Whether a message to the kernel matches the schema (for tests and callers). */
export function isFrontendMessage(data: unknown): data is FrontendMessage {
  return (validateFrontendMessage as Validator)(data);
}
