-- compatible_from: 22
-- Upstream providers authenticate with a sealed client secret, or with a sealed private key that signs a
-- JWT client secret (Sign in with Apple) or RFC 7523 client assertions. The kind says which, so a value
-- sealed as one is never used as another and a policy switching kinds must give the new credential.
ALTER TABLE upstream_client_secrets ADD COLUMN kind text NOT NULL DEFAULT 'client_secret'
    CHECK (kind IN ('client_secret', 'client_secret_jwt_key', 'private_key_jwt_key'));

-- The user's name as an upstream provider gave it on first sign-in (Apple sends it once, in the
-- form_post response, never in the ID token); userinfo returns it as `name` with the profile scope.
ALTER TABLE users ADD COLUMN name text CHECK (length(name) BETWEEN 1 AND 200);
