// Author, text and engagement counts of each post in data/posts.csv. Written as a module to show defineJob:
// field names and types are checked by the editor and by `npm run typecheck`.
import { defineJob } from 'netingest';

export default defineJob({
  operation: 'post-details',
  input: { csv: 'data/posts.csv', column: 'post_url' },
  // 600/minute suits the local sandbox of `npm run demo`; the polite default (leave `rate` out) is 60/minute.
  rate: { requestsPerMinute: 600, concurrency: 4 },
  credits: { reserve: 100 },
  // Engagement moves quickly in the first days of a post: fetch again after two days.
  refreshAfterDays: 2,
});
