-- Instances of a template follow later changes of it (templatized DCR): each keeps the members it
-- set itself (template_overrides) and the template version its metadata was built from.
ALTER TABLE clients ADD COLUMN template_overrides jsonb, ADD COLUMN template_version integer;

-- Instances registered before this migration: their own members are the overridable ones whose
-- value differs from the template's (plus software_version, which every instance may send).
-- RLS is forced on clients, so the owner lifts it for this one statement.
ALTER TABLE clients NO FORCE ROW LEVEL SECURITY;
UPDATE clients c
SET template_version = t.version,
    template_overrides = COALESCE(
        (SELECT jsonb_object_agg(m.key, m.value) FROM jsonb_each(c.metadata) AS m
         WHERE m.key = ANY (t.overridable_fields || ARRAY['software_version'])
           AND (t.metadata -> m.key) IS DISTINCT FROM m.value),
        '{}'::jsonb)
FROM client_templates t
WHERE t.tenant_id = c.tenant_id AND t.software_id = c.software_id;
ALTER TABLE clients FORCE ROW LEVEL SECURITY;

-- A template update walks its active instances in client_id order, in bounded batches.
CREATE INDEX clients_template_instances ON clients (tenant_id, software_id, client_id) WHERE status = 'active';
