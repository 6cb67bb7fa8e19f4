-- compatible_from: 22
-- Every grant inserts an access-token record and an outbox row. A foreign key to tenants made each of those
-- inserts lock the tenant's row (FOR KEY SHARE) until commit: all concurrent grants of a tenant locked the
-- same row, so each one rewrote that row's lock (a new multixact and a WAL record) on top of its own writes.
-- Both rows are only ever written by statements that have just read the tenant's client (the grant
-- functions, the event writers of the tenant's own requests), and a refresh token references its client,
-- which references the tenant. What the keys still did, removing a tenant's rows with the tenant, is done
-- by a trigger instead.
ALTER TABLE issued_access_tokens DROP CONSTRAINT issued_access_tokens_tenant_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT outbox_tenant_id_fkey;
ALTER TABLE refresh_tokens DROP CONSTRAINT refresh_tokens_tenant_id_fkey;

-- Runs as the role that deletes the tenant, so Row-Level Security applies to it as to that deletion.
CREATE FUNCTION tenants_delete_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM issued_access_tokens WHERE tenant_id = OLD.tenant_id;
    DELETE FROM outbox WHERE tenant_id = OLD.tenant_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER tenants_deleted AFTER DELETE ON tenants FOR EACH ROW EXECUTE FUNCTION tenants_delete_rows();
