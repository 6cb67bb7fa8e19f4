-- The gateway's expiry job revokes inactive clients like every other revocation does, which also
-- clears the registration access token (RFC 7592 stops answering for the client at once).
GRANT UPDATE (registration_token_hash) ON clients TO latchkey_system;
