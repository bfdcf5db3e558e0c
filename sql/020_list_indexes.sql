-- Lists page newest first by keyset on (created_at, id): with id in the index, the comparison
-- `(created_at, id) < (…)` of the next page is one index range, whatever the account's size.
DROP INDEX meters_account_created;
CREATE INDEX meters_account_created ON meters (account_id, created_at DESC, id DESC);

-- The same order within one status: a rare status (failed) is found without walking the others.
CREATE INDEX meters_account_status_created ON meters (account_id, status, created_at DESC, id DESC);

-- The meters list: ordered by meter_id byte by byte (collation "C"), so that paging and a prefix
-- search (LIKE 'SN-4%') are index ranges in any database collation.
CREATE INDEX meter_points_account_external_c ON meter_points (account_id, (external_id COLLATE "C"));
