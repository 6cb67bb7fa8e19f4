-- Whether a user's email address was verified: by the upstream identity provider that vouched for it
-- (`email_verified` in its ID token) or by the administrator who created the user. Self sign-up does
-- not verify addresses, so such users start unverified. userinfo reports it as `email_verified`.
ALTER TABLE users ADD COLUMN email_verified boolean NOT NULL DEFAULT false;
