/** A post URL's `post_id` (`activity-<digits>`, as the API's `PostId`), or null: one rule for ingest and enrich. */
export function postIdOfUrl(url: string): string | null {
  const digits = /activity(?:[-:]|%3A)(\d+)/i.exec(url)?.[1];
  return digits === undefined ? null : `activity-${digits}`;
}

/** An answer's `PostId` in postIdOfUrl's form, so the two compare; other non-empty text is kept trimmed. */
export function postIdOfAnswer(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (text === '') return null;
  if (/^\d+$/.test(text)) return `activity-${text}`;
  return postIdOfUrl(text) ?? text;
}
