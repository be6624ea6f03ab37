// What breaks a released app: the changes between a kept OpenAPI document (openapi/released/) and the
// served one that a client generated from the kept document would not survive. api-smart-diff (a
// maintained OpenAPI 3.1 diff that resolves $refs and classifies each change) finds and classifies
// the changes; the rules below correct it where its classification is not this contract's:
//
// Breaking (a kept client fails):
//   * an operation removed (or its path renamed), a success status removed;
//   * in a response: a field removed or renamed, or made optional (it may be absent); an enum value
//     added or renamed, a type widened (another type, or null, where the kept document had one);
//   * in a request: a body field or a parameter removed (bodies are strict: the field is refused);
//     a field, parameter or header added as required or made required; a type
//     narrowed (a type change, an enum value removed, a new or lower maxLength/maxItems/maximum, a
//     new or higher minimum, a new pattern or format).
// Not breaking (a kept client keeps working):
//   * anything added that a client may ignore: operations, optional request fields, parameters and
//     headers, response fields and headers, and response statuses (new codes such as 304 or 426 are
//     handled by their class, as every client handles a status it does not know);
//   * new error codes in an error response (`error.code`, `x-error-codes`): clients act on the codes
//     they know and on the HTTP status for the others (docs/api.md);
//   * bounds on what responses hold (maxLength, maximum ...): a client reads JSON, it does not
//     re-validate it, so a response bound may move; descriptions, examples, summaries.
import { apiCompare } from 'api-smart-diff';

type Json = Record<string, unknown>;
export interface Change {
  /** Where, as a JSON pointer-like path in the served document (`paths//posts/{postId}/delete`). */
  at: string;
  /** What, as a person reads it. */
  what: string;
}

const methods = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

/** The part of the document a path points into, and which side of the wire it is. */
function sideOf(path: (string | number)[]): { response?: number } {
  const at = path.indexOf('responses');
  return at >= 0 ? { response: Number(path[at + 1]) } : {};
}

const typesOf = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : value === undefined ? [] : [String(value)]);

/** A response change that widens what a kept client reads, which the library calls non-breaking. */
function widensResponse(
  key: string | number | undefined,
  parentKey: string | number | undefined,
  before: unknown,
  after: unknown,
  action: string,
): boolean {
  // A type: every type the served document allows must be one the kept one allowed.
  // (A type where there was none narrows; no type where there was one widens.)
  if (key === 'type') {
    if (action === 'add') return false;
    if (action === 'remove') return true;
    const kept = typesOf(before);
    return typesOf(after).some((type) => !kept.includes(type));
  }
  // An enum value replaced (renamed): the new value is one a kept client does not know.
  if (parentKey === 'enum' && action === 'replace') return true;
  // A const replaced, or dropped (any value now).
  if (key === 'const') return action !== 'add';
  return false;
}

/** Bounds on what a response holds: a client reads them, it does not re-validate them (see above). */
const responseBounds = new Set([
  'maxLength',
  'minLength',
  'maxItems',
  'minItems',
  'maximum',
  'minimum',
  'exclusiveMaximum',
  'exclusiveMinimum',
  'maxProperties',
  'minProperties',
]);

/** A new error code in an error response: allowed (see above). */
function isErrorCode(path: (string | number)[]): boolean {
  const { response } = sideOf(path);
  if (response === undefined || response < 400) return false;
  const text = path.join('/');
  return text.includes('/x-error-codes') || /\/properties\/error\/properties\/code(\/|$)/.test(text);
}

/** The breaking changes from `kept` to `served`, each named. Both are whole OpenAPI 3.1 documents. */
export function breakingChanges(kept: Json, served: Json): Change[] {
  // Copies: the comparison rewrites what it is given (it merges allOf and resolves $refs in place).
  const { diffs } = apiCompare(structuredClone(kept), structuredClone(served));
  const changes: Change[] = [];
  for (const diff of diffs) {
    const path = diff.path as (string | number)[];
    // Components are compared where operations use them (the library resolves $refs): a component
    // change is reported at each operation it reaches.
    if (path[0] !== 'paths') continue;
    const key = path.at(-1);
    const parentKey = path.at(-2);
    const { response } = sideOf(path);
    let breaking = diff.type === 'breaking';
    // A request body field removed: bodies are strict, so a kept client that sends it is refused.
    if (path.includes('requestBody') && parentKey === 'properties' && diff.action === 'remove') breaking = true;
    if (isErrorCode(path)) breaking = false;
    else if (response !== undefined && responseBounds.has(String(key))) breaking = false;
    else if (response !== undefined && response < 400 && !breaking)
      breaking = widensResponse(key, parentKey, diff.before, diff.after, diff.action);
    // A success status removed (the operation answers with another): the kept client expects it.
    if (response !== undefined && path.length === 5 && methods.has(String(path[2])) && diff.action === 'remove' && response < 300)
      breaking = true;
    if (!breaking) continue;
    const operation = methods.has(String(path[2])) ? `${String(path[2]).toUpperCase()} ${String(path[1])}` : String(path[1]);
    const description = (diff.description ?? '').trim() || `${diff.action} ${String(key)}`;
    changes.push({ at: path.join('/'), what: `${operation}: ${description} (at ${path.slice(3).join('/') || 'the operation'})` });
  }
  return changes;
}
