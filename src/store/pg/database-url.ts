/**
 * A PostgreSQL URL as it may be shown: the password (in the user part or a `password=` parameter) replaced,
 * so no message, log line or error ever carries it.
 */
const HIDDEN = '***';

export function redactDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Unparseable: hide everything between the scheme and the host rather than risk showing a password.
    return url.replace(/\/\/[^@/]*@/, `//${HIDDEN}@`).replace(/([?&]password=)[^&]*/gi, `$1${HIDDEN}`);
  }
  if (parsed.password) parsed.password = HIDDEN;
  for (const key of [...parsed.searchParams.keys()]) {
    if (key.toLowerCase() === 'password') parsed.searchParams.set(key, HIDDEN);
  }
  return parsed.toString();
}

/** Whether `value` names a PostgreSQL database (the schemes libpq and node-postgres take). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value.trim());
}
