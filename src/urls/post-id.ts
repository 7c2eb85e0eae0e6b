/**
 * The `post_id` a post URL stands for: `activity-<digits>` from the `…-activity-<digits>-…` or
 * `urn:li:activity:<digits>` in it (the `:` may be percent-encoded), the form the API answers as `PostId`.
 * Shared by the ingest (the post asked for) and enrich (finding the post of an input URL), so that the
 * two cannot disagree on which post a URL means. Null when the URL names no activity.
 */
export function postIdOfUrl(url: string): string | null {
  const digits = /activity(?:[-:]|%3A)(\d+)/i.exec(url)?.[1];
  return digits === undefined ? null : `activity-${digits}`;
}

/**
 * The `post_id` an answer's `PostId` names, in the same form as postIdOfUrl's so the two compare: bare digits
 * and `urn:li:activity:<digits>` become `activity-<digits>`; any other non-empty text is kept trimmed.
 */
export function postIdOfAnswer(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (text === '') return null;
  if (/^\d+$/.test(text)) return `activity-${text}`;
  return postIdOfUrl(text) ?? text;
}
