-- Step-up sign-in: the sign-in whoever decides must show (`requireSignIn`), as JSON ({"maxAgeSeconds", "acr",
-- "mfa"}). NULL: any valid sign-in decides.
ALTER TABLE approvals ADD COLUMN require_sign_in_json TEXT;
