-- An administrator deletes a user: the row stays as an anonymous tombstone (status 'deleted', username
-- 'deleted:<user_id>', no email or password) so that the user's revoked instances, token records and the
-- audit log keep pointing at a user id, while the name is free again and nothing personal remains.
ALTER TABLE users DROP CONSTRAINT users_status_check;
ALTER TABLE users ADD CONSTRAINT users_status_check CHECK (status IN ('active', 'locked', 'disabled', 'deleted'));
ALTER TABLE users ADD COLUMN deleted_at timestamptz;

-- The admin user list searches by name or address and pages newest first.
CREATE INDEX users_by_created ON users (tenant_id, created_at DESC, user_id DESC);
