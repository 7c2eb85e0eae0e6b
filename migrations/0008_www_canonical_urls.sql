-- Page URLs take the form the site writes, `https://www.<host>/...`, with country and mobile subdomains folded
-- in. Re-reading every stored URL (hosts, editions, merging rows that now share a key) needs the URL parser, so
-- this marks the rewrite as due and openDatabase() runs it right after the SQL migrations, in one transaction
-- (src/db/upgrades/www-canonical-urls.ts), and records it done. A build that predates this file refuses the
-- database as too new rather than keying new tasks the old way.
INSERT INTO `netingest_meta` (`key`, `value`) VALUES ('canonical_urls', 'pending')
  ON CONFLICT (`key`) DO UPDATE SET `value` = 'pending';
