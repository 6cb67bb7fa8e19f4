-- DPoP proof and client-assertion identifiers seen by any token-service replica, until their acceptance
-- window closes: a proof replayed to another replica is refused like one replayed to the same replica.
-- The key is SHA-256 of (key thumbprint, jti), never the values themselves. UNLOGGED: a crash empties
-- it, which only reopens the few seconds of windows in flight, and it costs no WAL on the grant path.
CREATE UNLOGGED TABLE dpop_replay (
    key        bytea PRIMARY KEY CHECK (length(key) = 32),
    expires_at timestamptz NOT NULL
);
CREATE INDEX dpop_replay_expiry ON dpop_replay (expires_at);
GRANT SELECT, INSERT, UPDATE, DELETE ON dpop_replay TO latchkey_app;
