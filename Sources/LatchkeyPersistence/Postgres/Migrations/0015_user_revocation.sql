-- Ending everything of one user (an administrator revokes a user's clients or disables the user) finds
-- their sessions, refresh tokens and access tokens by user across all clients, static ones included.
-- latchkey_app already holds SELECT and UPDATE on these tables and on users (status), under the
-- tenant_isolation policies; only the lookups need indexes.
CREATE INDEX sso_sessions_by_user ON sso_sessions (tenant_id, user_id) WHERE revoked_at IS NULL;
CREATE INDEX refresh_tokens_by_user ON refresh_tokens (tenant_id, user_id) WHERE status <> 'revoked';
CREATE INDEX issued_access_tokens_by_user ON issued_access_tokens (tenant_id, user_id) WHERE revoked_at IS NULL;
