/**
 * The `post_id` a post URL stands for: `activity-<digits>` from the `…-activity-<digits>-…` or
 * `urn:li:activity:<digits>` in it (the `:` may be percent-encoded), the form the API answers as `PostId`.
 * Shared by the ingest (a response without PostId) and enrich (finding the post of an input URL), so that the
 * two cannot disagree on which post a URL means. Null when the URL names no activity.
 */
export function postIdOfUrl(url: string): string | null {
  const digits = /activity(?:[-:]|%3A)(\d+)/i.exec(url)?.[1];
  return digits === undefined ? null : `activity-${digits}`;
}
