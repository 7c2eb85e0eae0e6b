/**
 * A PostgreSQL URL as it may be shown: its password (user part or `password=` parameter) hidden. Read as text: a URL
 * parser would split a password holding an unencoded `/`, `?`, `#`, `@` or `&` into host, path or query, and show it.
 */
const HIDDEN = '***';

/** Up to the next `&name=` parameter, or the end: a `password=` value with `&` or `#` in it is hidden whole. */
const PARAMETER_VALUE = /(?:(?!&[A-Za-z_][\w.-]*=)[\s\S])*/;
/** `password=`, and libpq's `sslpassword=` (the client key's passphrase) a URL written for psql may carry. */
const PASSWORD_PARAMETER = new RegExp(`([?&](?:ssl)?password=)${PARAMETER_VALUE.source}`, 'gi');

export function redactDatabaseUrl(url: string): string {
  const slashes = url.indexOf('//');
  if (slashes < 0) return hideUserPart(url);
  const head = url.slice(0, slashes + 2);
  const rest = url.slice(slashes + 2);
  const end = authorityEnd(rest);
  if (rest.includes('@', end)) {
    // Where the user part ends cannot be told: everything up to the last `@` is hidden.
    const at = rest.lastIndexOf('@');
    const tail = rest.slice(at + 1);
    const hiddenTail = /password=/i.test(rest.slice(0, at)) ? tail.replace(PARAMETER_VALUE, HIDDEN) : tail;
    return `${head}${HIDDEN}@${hidePasswordParameter(hiddenTail)}`;
  }
  const at = rest.lastIndexOf('@', end);
  if (at < 0) return head + hidePasswordParameter(rest);
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(':');
  const shownUser = colon < 0 ? userinfo : `${userinfo.slice(0, colon)}:${HIDDEN}`;
  return `${head}${shownUser}@${hidePasswordParameter(rest.slice(at + 1))}`;
}

/**
 * A value with no `//` (`postgres:/user:pw@host/db`, `user:pw@host/db`): which part is the password cannot be told, so
 * everything up to the last `@` is hidden but a leading scheme.
 */
function hideUserPart(text: string): string {
  const at = text.lastIndexOf('@');
  if (at < 0) return hidePasswordParameter(text);
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(text.slice(0, at))?.[0] ?? '';
  return `${scheme}${HIDDEN}@${hidePasswordParameter(text.slice(at + 1))}`;
}

/** Whether an `@` follows the host part: a password with an unencoded `/`, `?` or `#`, which a URL parser misreads. */
export function hasAtAfterAuthority(url: string): boolean {
  const slashes = url.indexOf('//');
  if (slashes < 0) return false;
  const rest = url.slice(slashes + 2);
  return rest.includes('@', authorityEnd(rest));
}

/** Where `user:password@host:port` ends: at the first `/`, `?` or `#`. */
function authorityEnd(rest: string): number {
  const end = rest.search(/[/?#]/);
  return end < 0 ? rest.length : end;
}

function hidePasswordParameter(text: string): string {
  return text.replace(PASSWORD_PARAMETER, `$1${HIDDEN}`);
}

/**
 * Whether `value` is a PostgreSQL URL mistyped (`postgres:/`, `postgresql//`) or without its scheme (a `user:pw@host`
 * part): taken for a SQLite file's path, it would make a new, empty dataset and pay again for every task.
 */
export function looksLikeMistypedUrl(value: string): boolean {
  return /^postgres(ql)?(:|\/\/)/i.test(value.trim()) || /(^|\/)[^/]*:[^/]*@/.test(value);
}

/** Whether `value` names a PostgreSQL database (the schemes libpq and node-postgres take). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value.trim());
}
