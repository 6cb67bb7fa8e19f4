-- Client secret rotation with an overlap: the rotated-out secret's keyed hash still authenticates until
-- previous_client_secret_expires_at, so an instance that has not picked up its new secret yet keeps working.
ALTER TABLE clients ADD COLUMN previous_client_secret_hash text;
ALTER TABLE clients ADD COLUMN previous_client_secret_expires_at timestamptz;
ALTER TABLE clients ADD CONSTRAINT clients_previous_secret_pair
    CHECK ((previous_client_secret_hash IS NULL) = (previous_client_secret_expires_at IS NULL));
