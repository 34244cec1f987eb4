#!/usr/bin/env node
// Cognito-shaped OIDC stand-in for local runs and browser tests of ringi (panva oidc-provider 9.13.3).
//
// Run (Node 22): node standins/oidc/cognito-oidc.mjs
// Prints exactly one line "ready <issuer>" on stdout once listening; oidc-provider notices go to stderr.
// SIGTERM / SIGINT: closes the listener and exits 0. All state (sessions, codes, refresh tokens) is in memory.
//
// Environment
//   PORT                       listen port on 127.0.0.1 (default 9000). HOST is always 127.0.0.1.
//   POOL_ID                    user-pool id (default local_RingiPool1)
//                              issuer  = http://127.0.0.1:$PORT/$POOL_ID
//                              JWKS    = $ISSUER/.well-known/jwks.json, discovery = $ISSUER/.well-known/openid-configuration
//   CLIENT_ID                  public app client, no secret (default ringi-local-client)
//   REDIRECT_URIS              comma-separated callback URLs (default http://127.0.0.1:8787/callback)
//   POST_LOGOUT_REDIRECT_URIS  comma-separated sign-out URLs for /logout?logout_uri= (default http://127.0.0.1:8787/)
//   USERS_FILE                 JSON [{username, password, sub, email, email_verified, groups:[...]}]
//                              (default users.json next to this script)
//   KEYS_FILE                  optional JSON {"keys":[private RSA JWK with kid (alg RS256, use sig)]}; the first key
//                              signs, every key is published in the JWKS. Without it one RS256 key is generated.
//   KEYS_OUT                   when the key is generated: write its private JWKS here (mode 0600) so tests can
//                              mint tokens the worker accepts.
//   ACCESS_TTL                 access-token lifetime in seconds (default 3600)
//   ID_TTL                     ID-token lifetime in seconds (default: ACCESS_TTL)
//   SESSION_TTL                Hosted-UI session cookie lifetime in seconds (default 3600, as Cognito)
//   REFRESH_TTL                refresh-token lifetime in seconds (default 2592000 = 30 days, as Cognito)
//   PROFILE                    cognito (default); entra: an Entra-ID-like generic OpenID Connect provider;
//                              okta: an Okta-like one (see "Entra profile" and "Okta profile" below)
//   OTP_CODE                   the one-time code every user's second factor accepts (default 246810)
//
// Hosted-UI endpoints ("COGNITO_DOMAIN" = http://127.0.0.1:$PORT):
//   GET  /oauth2/authorize    code flow; PKCE required, S256 only; scopes openid email profile; no consent screen
//   POST /oauth2/token        authorization_code (+code_verifier) and refresh_token grants; public client
//   GET|POST /oauth2/userInfo Bearer access token -> {sub, email_verified, email, username}
//   POST /oauth2/revoke       token=<refresh token>&client_id=...
//   GET  /logout              ?client_id=..&logout_uri=<registered sign-out URL>: ends the session, 302 to logout_uri
//                             ?client_id=..&redirect_uri=..&response_type=code&...: ends the session, 302 to authorize
//   /interaction/<uid>        the login form (username, password, an optional one-time code, signInSubmitButton);
//                             no script
//   POST /test/age-sessions   seconds=N: every live sign-in session counts as N seconds older (its auth_time), as
//                             if the user had signed in that long ago; a test's way to a stale sign-in
//
// Step-up (OpenID Connect Core §3.1.2.1): max_age and prompt=login show the login form again even with a live
// session, and the new sign-in's auth_time is now. A one-time code (OTP_CODE) given with the password is a second
// factor. acr_values asking for a two-factor level makes the code required. auth_time, acr and amr in the tokens,
// per profile as the real provider issues them by default: Cognito auth_time only (ID and access token); Entra
// neither acr nor amr in v2.0 tokens (auth_time in the ID token only, an optional claim there); Okta auth_time in
// both, amr (["pwd"], ["pwd","otp","mfa"] with the code) and acr (urn:okta:loa:1fa:pwd / urn:okta:loa:2fa:any)
// in the ID token.
//
// Demo users (standins/oidc/users.json), all with password "Passw0rd!":
//   alice  groups [finance]          email alice@example.com  verified
//   bob    no groups                 email bob@example.com    verified
//   carol  groups [finance]          email carol@example.com  verified
//   dave   groups [finance, admin]   email dave@example.com   email_verified false
// Sign-in accepts the username (case-insensitive) or the email address.
//
// Token shapes (RS256, header {alg, kid} only):
//   ID token:     at_hash, sub, cognito:groups (omitted if none), email_verified, iss, cognito:username, origin_jti,
//                 aud=CLIENT_ID, event_id, token_use:"id", auth_time, exp, iat, jti, email
//   access token: sub, cognito:groups (omitted if none), iss, version:2, client_id, origin_jti, event_id,
//                 token_use:"access", scope, auth_time, exp, iat, jti, username; no aud
// Known differences from Cognito: see the bottom of this file.
//
// Entra profile (PROFILE=entra), a generic OpenID Connect provider shaped like Microsoft Entra ID v2.0:
//   issuer    = http://127.0.0.1:$PORT/$POOL_ID/v2.0, discovery = $ISSUER/.well-known/openid-configuration with
//               authorization_endpoint, token_endpoint, end_session_endpoint and jwks_uri
//   JWKS      = http://127.0.0.1:$PORT/$POOL_ID/discovery/v2.0/keys (not below the issuer: only discovery finds
//               it); keys without alg ({kty, use: "sig", kid, x5t, n, e})
//   tokens    : no token_use / client_id / cognito:*; aud = CLIENT_ID, azp = CLIENT_ID, roles (the user's groups,
//               omitted if none), scp (space-separated), preferred_username, name, oid, tid, ver "2.0"; email only
//               for users whose address is verified, and never email_verified; header {typ, alg, kid}
//   GET /oauth2/v2.0/logout  RP-initiated logout: post_logout_redirect_uri (registered), client_id, id_token_hint
//               (both optional, checked when present): ends the session, 302 to post_logout_redirect_uri
//   Cognito's /logout does not exist in this profile.
//
// Okta profile (PROFILE=okta), shaped like an Okta custom authorization server (`default`):
//   issuer    = http://127.0.0.1:$PORT/oauth2/default, discovery below it; JWKS = $ISSUER/v1/keys (keys with alg)
//   ID token  : sub (the user id), aud = CLIENT_ID, ver 1, email + email_verified, groups (the groups claim an
//               admin adds; omitted if none), preferred_username, name, amr, idp, auth_time, at_hash; no azp
//   access    : aud "api://default", cid = CLIENT_ID, uid (the user id), sub = the login (the email), scp as an
//               array, groups; ver 1
//   GET $ISSUER/v1/logout  id_token_hint REQUIRED (as Okta), post_logout_redirect_uri registered: ends the session
//   Cognito's /logout does not exist in this profile.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

import Provider, { errors } from 'oidc-provider';

// ------------------------------------------------------------------ configuration

const env = process.env;
const HERE = path.dirname(fileURLToPath(import.meta.url));

function intEnv(name, dflt) {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
}
function listEnv(name, dflt) {
  const raw = env[name];
  const items = (raw === undefined || raw === '' ? dflt : raw).split(',').map((s) => s.trim()).filter(Boolean);
  for (const u of items) new URL(u); // throws on garbage
  return items;
}

const HOST = '127.0.0.1';
const PORT = intEnv('PORT', 9000);
const POOL_ID = env.POOL_ID || 'local_RingiPool1';
if (!/^[\w-]+$/.test(POOL_ID)) throw new Error(`POOL_ID must match [A-Za-z0-9_-]+, got ${POOL_ID}`);
const PROFILE = env.PROFILE || 'cognito';
if (!['cognito', 'entra', 'okta'].includes(PROFILE)) throw new Error(`PROFILE must be cognito, entra or okta, got ${PROFILE}`);
const ENTRA = PROFILE === 'entra';
const OKTA = PROFILE === 'okta';
const COGNITO = PROFILE === 'cognito';
const BASE = `http://${HOST}:${PORT}`;
const ISSUER_PATH = ENTRA ? `/${POOL_ID}/v2.0` : OKTA ? '/oauth2/default' : `/${POOL_ID}`;
const ISSUER = `${BASE}${ISSUER_PATH}`;
// Entra publishes its keys beside the issuer, not below it.
const ENTRA_JWKS_PATH = `/${POOL_ID}/discovery/v2.0/keys`;
const ENTRA_LOGOUT_PATH = '/oauth2/v2.0/logout';
// Okta's audience of the default authorization server's access tokens, and its ids' shapes.
const OKTA_AUDIENCE = 'api://default';
const OKTA_IDP = `00o${crypto.createHash('sha256').update(POOL_ID).digest('hex').slice(0, 17)}`;
const TENANT_ID = uuidFor('tenant', POOL_ID);
const CLIENT_ID = env.CLIENT_ID || 'ringi-local-client';
const REDIRECT_URIS = listEnv('REDIRECT_URIS', 'http://127.0.0.1:8787/callback');
const POST_LOGOUT_REDIRECT_URIS = listEnv('POST_LOGOUT_REDIRECT_URIS', 'http://127.0.0.1:8787/');
const USERS_FILE = env.USERS_FILE || path.join(HERE, 'users.json');
const ACCESS_TTL = intEnv('ACCESS_TTL', 3600);
const ID_TTL = intEnv('ID_TTL', ACCESS_TTL);
const SESSION_TTL = intEnv('SESSION_TTL', 3600);
const REFRESH_TTL = intEnv('REFRESH_TTL', 30 * 24 * 3600);
const CODE_TTL = 300; // Cognito authorization codes live 5 minutes
const OTP_CODE = env.OTP_CODE || '246810';
// Okta's authentication levels (acr): one factor (the password), two factors (password and code).
const ACR_ONE = 'urn:okta:loa:1fa:pwd';
const ACR_TWO = 'urn:okta:loa:2fa:any';

const SCOPES = ['openid', 'email', 'profile'];
// oidc-provider only issues JWT access tokens for a resource server, and such tokens must carry an audience.
// The audience below is removed from the serialized token again (see customizeAccessToken).
const RESOURCE = 'urn:cognito:access';
const NO_AUD = Symbol('no aud'); // truthy for oidc-provider's check, dropped by JSON.stringify
const CORS_ORIGINS = new Set([...REDIRECT_URIS, ...POST_LOGOUT_REDIRECT_URIS].map((u) => new URL(u).origin));

// ------------------------------------------------------------------ users

function loadUsers(file) {
  const list = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (!Array.isArray(list) || list.length === 0) throw new Error(`${file}: expected a non-empty JSON array`);
  const bySub = new Map();
  const byLogin = new Map();
  for (const u of list) {
    for (const f of ['username', 'password', 'sub', 'email']) {
      if (typeof u[f] !== 'string' || !u[f]) throw new Error(`${file}: user ${JSON.stringify(u.username)} lacks ${f}`);
    }
    const user = {
      username: u.username,
      password: u.password,
      sub: u.sub,
      email: u.email,
      email_verified: u.email_verified !== false,
      groups: Array.isArray(u.groups) ? u.groups.map(String) : [],
    };
    if (bySub.has(user.sub)) throw new Error(`${file}: duplicate sub ${user.sub}`);
    bySub.set(user.sub, user);
    for (const login of [user.username.toLowerCase(), user.email.toLowerCase()]) {
      if (byLogin.has(login) && byLogin.get(login) !== user) throw new Error(`${file}: duplicate login ${login}`);
      byLogin.set(login, user);
    }
  }
  return { bySub, byLogin };
}
const USERS = loadUsers(USERS_FILE);

// ------------------------------------------------------------------ keys

function loadKeys() {
  if (env.KEYS_FILE) {
    const jwks = JSON.parse(fs.readFileSync(env.KEYS_FILE, 'utf8'));
    if (!jwks || !Array.isArray(jwks.keys) || jwks.keys.length === 0) {
      throw new Error(`${env.KEYS_FILE}: expected {"keys":[...]} with at least one key`);
    }
    return jwks.keys.map((k, i) => {
      if (k.kty !== 'RSA' || !k.d || typeof k.kid !== 'string' || !k.kid) {
        throw new Error(`${env.KEYS_FILE}: keys[${i}] must be a private RSA JWK with a kid`);
      }
      if ((k.alg && k.alg !== 'RS256') || (k.use && k.use !== 'sig')) {
        throw new Error(`${env.KEYS_FILE}: keys[${i}] must be alg RS256, use sig`);
      }
      return { ...k, alg: 'RS256', use: 'sig' };
    });
  }
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  // Cognito kids are standard base64 of a 32-byte digest, e.g. "1IKrA+t5Hxz1...=": mimic that shape.
  const kid = crypto.createHash('sha256').update(jwk.n).digest('base64');
  const key = { kid, alg: 'RS256', use: 'sig', ...jwk };
  if (env.KEYS_OUT) {
    fs.writeFileSync(env.KEYS_OUT, `${JSON.stringify({ keys: [key] }, null, 2)}\n`, { mode: 0o600 });
  }
  return [key];
}
const PRIVATE_JWKS = loadKeys();
const KEY_OBJECTS = new Map(PRIVATE_JWKS.map((k) => [k.kid, {
  private: crypto.createPrivateKey({ key: k, format: 'jwk' }),
  public: crypto.createPublicKey({ key: { kty: k.kty, n: k.n, e: k.e }, format: 'jwk' }),
}]));
const PUBLIC_JWKS = {
  keys: PRIVATE_JWKS.map((k) => (ENTRA
    // Entra ID's shape: no alg member.
    ? { kty: 'RSA', use: 'sig', kid: k.kid, x5t: k.kid, n: k.n, e: k.e }
    : { alg: 'RS256', e: k.e, kid: k.kid, kty: 'RSA', n: k.n, use: 'sig' })),
};

// ------------------------------------------------------------------ small helpers

const b64json = (seg) => JSON.parse(Buffer.from(seg, 'base64url').toString('utf8'));

function signJwt(header, payload, keyObject) {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const sig = crypto.sign('sha256', Buffer.from(input), keyObject);
  return `${input}.${sig.toString('base64url')}`;
}

// Verifies one of our own RS256 JWTs; returns the payload or throws.
function verifyOwnJwt(token, { allowExpired = false } = {}) {
  const parts = String(token).split('.');
  if (parts.length !== 3) throw new Error('malformed token');
  const header = b64json(parts[0]);
  if (header.alg !== 'RS256') throw new Error('unexpected alg');
  const key = KEY_OBJECTS.get(header.kid);
  if (!key) throw new Error('unknown kid');
  const ok = crypto.verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), key.public, Buffer.from(parts[2], 'base64url'));
  if (!ok) throw new Error('bad signature');
  const payload = b64json(parts[1]);
  if (payload.iss !== ISSUER) throw new Error('wrong issuer');
  if (!allowExpired && (typeof payload.exp !== 'number' || payload.exp <= Math.floor(Date.now() / 1000))) throw new Error('Access Token has expired');
  return payload;
}

// A UUID derived from an oidc-provider id, so tokens from one sign-in share origin_jti/event_id.
function uuidFor(label, id) {
  const h = crypto.createHash('sha256').update(`${label}:${id}`).digest();
  h[6] = (h[6] & 0x0f) | 0x40;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

function safeEqual(a, b) {
  const ha = crypto.createHash('sha256').update(String(a)).digest();
  const hb = crypto.createHash('sha256').update(String(b)).digest();
  return crypto.timingSafeEqual(ha, hb);
}

const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ({
  '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
}[c]));

async function readForm(req, limit = 64 * 1024) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}

// ------------------------------------------------------------------ HTML

const STYLE = `
  body { font-family: system-ui, sans-serif; background: #f4f4f4; margin: 0; }
  main { max-width: 22rem; margin: 4rem auto; background: #fff; padding: 1.5rem 2rem; border-radius: 6px;
         box-shadow: 0 1px 4px rgba(0,0,0,.15); }
  h1 { font-size: 1.2rem; font-weight: 600; }
  label { display: block; margin-top: .8rem; font-size: .9rem; }
  input[type=text], input[type=password] { width: 100%; box-sizing: border-box; padding: .5rem; margin-top: .3rem;
         font-size: 1rem; border: 1px solid #999; border-radius: 4px; }
  input[type=submit] { margin-top: 1.2rem; width: 100%; padding: .6rem; font-size: 1rem; background: #1a73e8;
         color: #fff; border: 0; border-radius: 4px; cursor: pointer; }
  .errorMessage { color: #b00020; background: #fdecea; padding: .5rem; border-radius: 4px; }
  .note { color: #666; font-size: .8rem; margin-top: 1.2rem; }`;

function page(ctx, status, title, body) {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
  ctx.body = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main>
${body}
</main></body>
</html>
`;
}

function loginPage(ctx, uid, { error, username, needCode } = {}) {
  page(ctx, 200, 'Signin', `<h1>Sign in with your username and password</h1>
${error ? `<p id="loginErrorMessage" class="errorMessage" role="alert">${escapeHtml(error)}</p>` : ''}
<form name="cognitoSignInForm" method="post" action="/interaction/${encodeURIComponent(uid)}">
  <label for="signInFormUsername">Username</label>
  <input id="signInFormUsername" name="username" type="text" autocomplete="username" autocapitalize="none"
         required value="${escapeHtml(username || '')}">
  <label for="signInFormPassword">Password</label>
  <input id="signInFormPassword" name="password" type="password" autocomplete="current-password" required>
  <label for="signInFormCode">One-time code${needCode ? '' : ' (optional)'}</label>
  <input id="signInFormCode" name="code" type="text" inputmode="numeric" autocomplete="one-time-code"${needCode ? ' required' : ''}>
  <input name="signInSubmitButton" type="submit" value="Sign in">
</form>
<p class="note">Local Cognito stand-in (${escapeHtml(POOL_ID)})</p>`);
}

function errorPage(ctx, status, error, description) {
  page(ctx, status, 'Error', `<h1>An error was encountered with the requested page.</h1>
<p class="errorMessage" role="alert"><span id="errorCode">${escapeHtml(error)}</span>${description ? `: <span id="errorDescription">${escapeHtml(description)}</span>` : ''}</p>`);
}

// ------------------------------------------------------------------ in-memory adapter (unbounded, TTL-swept)

const STORE = new Map(); // key -> { value, exp (ms) | undefined }
const GRANTABLE = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode',
  'BackchannelAuthenticationRequest', 'PreAuthorizedCode']);
function storeGet(key) {
  const e = STORE.get(key);
  if (!e) return undefined;
  if (e.exp !== undefined && e.exp <= Date.now()) { STORE.delete(key); return undefined; }
  return e.value;
}
function storeSet(key, value, expiresIn) {
  STORE.set(key, { value, exp: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
}
setInterval(() => { for (const k of STORE.keys()) storeGet(k); }, 60_000).unref();

class MemoryAdapter {
  constructor(name) { this.name = name; }

  key(id) { return `${this.name}:${id}`; }

  async upsert(id, payload, expiresIn) {
    storeSet(this.key(id), payload, expiresIn);
    if (GRANTABLE.has(this.name) && payload.grantId) {
      const gk = `grant:${payload.grantId}`;
      const keys = storeGet(gk) || [];
      keys.push(this.key(id));
      storeSet(gk, keys, expiresIn && Math.max(expiresIn, REFRESH_TTL));
    }
    if (this.name === 'Session' && payload.uid) storeSet(`sessionUid:${payload.uid}`, id, expiresIn);
    if (payload.userCode) storeSet(`userCode:${payload.userCode}`, id, expiresIn);
  }

  async find(id) { return storeGet(this.key(id)); }

  async findByUid(uid) { const id = storeGet(`sessionUid:${uid}`); return id && this.find(id); }

  async findByUserCode(code) { const id = storeGet(`userCode:${code}`); return id && this.find(id); }

  async consume(id) { const p = storeGet(this.key(id)); if (p) p.consumed = Math.floor(Date.now() / 1000); }

  async destroy(id) { STORE.delete(this.key(id)); }

  async revokeByGrantId(grantId) {
    const gk = `grant:${grantId}`;
    for (const k of storeGet(gk) || []) STORE.delete(k);
    STORE.delete(gk);
  }
}

// ------------------------------------------------------------------ oidc-provider configuration

async function findAccount(ctx, sub, token) {
  const user = USERS.bySub.get(sub);
  if (!user) return undefined;
  return {
    accountId: sub,
    // Only the ID token uses these (userinfo is served by this script, not by oidc-provider).
    async claims() {
      if (ENTRA) return { sub: user.sub, ...entraClaims(user) };
      if (OKTA) {
        return {
          sub: user.sub,
          name: user.username,
          email: user.email,
          email_verified: user.email_verified,
          ver: 1,
          preferred_username: user.email,
          idp: OKTA_IDP,
          ...(user.groups.length ? { groups: user.groups } : {}),
        };
      }
      const grantId = token?.grantId;
      return {
        sub: user.sub,
        ...(user.groups.length ? { 'cognito:groups': user.groups } : {}),
        email_verified: user.email_verified,
        'cognito:username': user.username,
        origin_jti: grantId ? uuidFor('origin', grantId) : crypto.randomUUID(),
        event_id: grantId ? uuidFor('event', grantId) : crypto.randomUUID(),
        token_use: 'id',
        jti: crypto.randomUUID(),
        email: user.email,
      };
    },
  };
}

// One fresh grant per authorization request (covering every requested scope, so no consent prompt).
// Per-sign-in grants give each sign-in its own origin_jti/event_id, as Cognito does.
async function loadExistingGrant(ctx) {
  const { client, session } = ctx.oidc;
  if (!session.accountId) return undefined;
  const scope = [...ctx.oidc.requestParamScopes].filter((s) => SCOPES.includes(s)).join(' ');
  const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
  grant.addOIDCScope(scope);
  grant.addResourceScope(RESOURCE, scope);
  await grant.save();
  return grant;
}

// The user claims of the Entra profile's tokens (ID and access): no email_verified, the address only when verified.
function entraClaims(user) {
  return {
    ...(user.groups.length ? { roles: user.groups } : {}),
    ...(user.email_verified ? { email: user.email } : {}),
    preferred_username: user.username,
    name: user.username,
    oid: user.sub,
    tid: TENANT_ID,
    ver: '2.0',
  };
}

// Reshape oidc-provider's JWT access token into Cognito's (claim set, no aud, no typ header) or Entra's.
async function customizeAccessToken(ctx, token, jwt) {
  const p = jwt.payload;
  const user = USERS.bySub.get(token.accountId);
  if (ENTRA) {
    jwt.payload = {
      aud: CLIENT_ID,
      iss: p.iss,
      iat: p.iat,
      nbf: p.iat,
      exp: p.exp,
      azp: CLIENT_ID,
      azpacr: '0',
      scp: p.scope,
      sub: p.sub,
      uti: uuidFor('jti', p.jti),
      ...(user ? entraClaims(user) : {}),
    };
    jwt.header = { typ: 'JWT' };
    return;
  }
  if (OKTA) {
    jwt.payload = {
      ver: 1,
      jti: `AT.${uuidFor('jti', p.jti)}`,
      iss: p.iss,
      aud: OKTA_AUDIENCE,
      iat: p.iat,
      exp: p.exp,
      cid: CLIENT_ID,
      uid: p.sub,
      scp: String(p.scope || '').split(' ').filter(Boolean),
      auth_time: (ctx?.oidc?.entities?.AuthorizationCode || ctx?.oidc?.entities?.RefreshToken)?.authTime,
      sub: user?.email ?? p.sub,
      ...(user?.groups.length ? { groups: user.groups } : {}),
    };
    jwt.header = { typ: undefined };
    return;
  }
  const source = ctx?.oidc?.entities?.AuthorizationCode || ctx?.oidc?.entities?.RefreshToken;
  jwt.payload = {
    sub: p.sub,
    ...(user?.groups.length ? { 'cognito:groups': user.groups } : {}),
    iss: p.iss,
    version: 2,
    client_id: p.client_id,
    origin_jti: uuidFor('origin', token.grantId),
    event_id: uuidFor('event', token.grantId),
    token_use: 'access',
    scope: p.scope,
    auth_time: source?.authTime,
    exp: p.exp,
    iat: p.iat,
    jti: uuidFor('jti', p.jti),
    username: user?.username,
    aud: NO_AUD,
  };
  jwt.header = { typ: undefined };
}

const configuration = {
  adapter: MemoryAdapter,
  clients: [{
    client_id: CLIENT_ID,
    token_endpoint_auth_method: 'none',
    application_type: 'web',
    redirect_uris: REDIRECT_URIS,
    response_types: ['code'],
    grant_types: ['authorization_code', 'refresh_token'],
    id_token_signed_response_alg: 'RS256',
  }],
  jwks: { keys: PRIVATE_JWKS },
  responseTypes: ['code'],
  scopes: SCOPES,
  claims: ENTRA
    ? {
      openid: ['sub', 'roles', 'email', 'preferred_username', 'name', 'oid', 'tid', 'ver', 'auth_time'],
      email: ['email'],
      profile: [],
    }
    : OKTA ? {
      openid: ['sub', 'name', 'email', 'email_verified', 'ver', 'preferred_username', 'amr', 'acr', 'auth_time', 'idp',
        'groups'],
      email: ['email', 'email_verified'],
      profile: [],
    } : {
      openid: ['sub', 'cognito:groups', 'email_verified', 'cognito:username', 'origin_jti', 'event_id',
        'token_use', 'auth_time', 'jti', 'email'],
      email: ['email', 'email_verified'],
      profile: [],
    },
  conformIdTokenClaims: false,
  // Okta's levels are the only acr this stand-in issues (oidc-provider drops acr without them).
  acrValues: OKTA ? [ACR_ONE, ACR_TWO] : [],
  allowOmittingSingleRegisteredRedirectUri: false,
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    userinfo: { enabled: false },
    introspection: { enabled: false },
    rpInitiatedLogout: { enabled: false },
    revocation: {
      enabled: true,
      allowedPolicy: async (ctx, client, token) => token.clientId === client.clientId,
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => RESOURCE,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource) => {
        if (resource !== RESOURCE) throw new errors.InvalidTarget();
        return {
          scope: SCOPES.join(' '),
          audience: RESOURCE,
          accessTokenTTL: ACCESS_TTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  formats: { customizers: { jwt: customizeAccessToken } },
  interactions: { url: async (ctx, interaction) => `/interaction/${interaction.uid}` },
  loadExistingGrant,
  findAccount,
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: false, // Cognito's default: the refresh grant returns no new refresh token
  expiresWithSession: async () => false, // tokens outlive the Hosted-UI session, as with Cognito
  clientBasedCORS: (ctx, origin) => CORS_ORIGINS.has(origin),
  routes: {
    authorization: '/oauth2/authorize',
    token: '/oauth2/token',
    userinfo: '/oauth2/userInfo',
    revocation: '/oauth2/revoke',
    jwks: '/.well-known/jwks.json',
    end_session: '/oidc/session/end', // disabled; Cognito's /logout is implemented below
  },
  ttl: {
    AccessToken: ACCESS_TTL,
    AuthorizationCode: CODE_TTL,
    IdToken: ID_TTL,
    RefreshToken: REFRESH_TTL,
    Grant: REFRESH_TTL,
    Session: SESSION_TTL,
    Interaction: 3600,
  },
  renderError: async (ctx, out) => {
    errorPage(ctx, ctx.status && ctx.status >= 400 ? ctx.status : 400, out.error, out.error_description);
  },
};

const provider = new Provider(ISSUER, configuration);
provider.proxy = false;
provider.on('server_error', (ctx, err) => { console.error('server_error', ctx.method, ctx.path, err); });

// ------------------------------------------------------------------ Cognito-specific endpoints

function discovery() {
  if (ENTRA) {
    return {
      authorization_endpoint: `${BASE}/oauth2/authorize`,
      claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'roles', 'email', 'preferred_username', 'name',
        'oid', 'tid', 'ver'],
      code_challenge_methods_supported: ['S256'],
      end_session_endpoint: `${BASE}${ENTRA_LOGOUT_PATH}`,
      id_token_signing_alg_values_supported: ['RS256'],
      issuer: ISSUER,
      jwks_uri: `${BASE}${ENTRA_JWKS_PATH}`,
      response_modes_supported: ['query'],
      response_types_supported: ['code'],
      scopes_supported: SCOPES,
      subject_types_supported: ['pairwise'],
      token_endpoint: `${BASE}/oauth2/token`,
      token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
    };
  }
  if (OKTA) {
    return {
      issuer: ISSUER,
      authorization_endpoint: `${BASE}/oauth2/authorize`,
      token_endpoint: `${BASE}/oauth2/token`,
      jwks_uri: `${ISSUER}/v1/keys`,
      end_session_endpoint: `${ISSUER}/v1/logout`,
      response_types_supported: ['code'],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      subject_types_supported: ['public'],
      scopes_supported: SCOPES,
      claims_supported: ['iss', 'ver', 'sub', 'aud', 'iat', 'exp', 'jti', 'auth_time', 'amr', 'idp', 'name',
        'preferred_username', 'email', 'email_verified', 'groups'],
      code_challenge_methods_supported: ['S256'],
      id_token_signing_alg_values_supported: ['RS256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'client_secret_jwt',
        'private_key_jwt', 'none'],
    };
  }
  return {
    authorization_endpoint: `${BASE}/oauth2/authorize`,
    code_challenge_methods_supported: ['S256'],
    id_token_signing_alg_values_supported: ['RS256'],
    issuer: ISSUER,
    jwks_uri: `${ISSUER}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    revocation_endpoint: `${BASE}/oauth2/revoke`,
    scopes_supported: SCOPES,
    subject_types_supported: ['public'],
    token_endpoint: `${BASE}/oauth2/token`,
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    userinfo_endpoint: `${BASE}/oauth2/userInfo`,
  };
}

async function interaction(ctx, uid) {
  let details;
  try {
    details = await provider.interactionDetails(ctx.req, ctx.res);
  } catch {
    return errorPage(ctx, 400, 'invalid_request', 'The sign-in session has expired. Return to the application and sign in again.');
  }
  if (details.uid !== uid) {
    return errorPage(ctx, 400, 'invalid_request', 'The sign-in session does not match.');
  }

  const finish = async (result) => {
    const to = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
    ctx.status = 303;
    ctx.redirect(to);
  };

  if (details.prompt.name === 'consent') { // not expected (loadExistingGrant covers the request); grant it
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    const scope = String(details.params.scope || '').split(' ').filter((s) => SCOPES.includes(s)).join(' ');
    grant.addOIDCScope(scope);
    grant.addResourceScope(RESOURCE, scope);
    return finish({ consent: { grantId: await grant.save() } });
  }

  // acr_values asking for two factors (Okta's 2fa levels) make the one-time code required.
  const needCode = String(details.params.acr_values || '').split(' ').some((v) => v.includes(':2fa:'));
  if (ctx.method === 'GET') return loginPage(ctx, uid, { needCode });
  if (ctx.method !== 'POST') { ctx.status = 405; return undefined; }

  const form = await readForm(ctx.req);
  const login = String(form.username || '').trim();
  const user = USERS.byLogin.get(login.toLowerCase());
  const passwordOk = safeEqual(form.password ?? '', user ? user.password : '\0no-such-user');
  if (!user || !passwordOk) {
    return loginPage(ctx, uid, { error: 'Incorrect username or password.', username: login, needCode });
  }
  const code = String(form.code || '').trim();
  if (code ? !safeEqual(code, OTP_CODE) : needCode) {
    const error = code ? 'Incorrect one-time code.' : 'This sign-in needs your one-time code.';
    return loginPage(ctx, uid, { error, username: login, needCode });
  }
  // How the user authenticated (RFC 8176), as the session and so every token of it records it; only Okta's
  // tokens carry it (see the top of this file).
  const methods = OKTA ? { amr: code ? ['pwd', 'otp', 'mfa'] : ['pwd'], acr: code ? ACR_TWO : ACR_ONE } : {};
  return finish({ login: { accountId: user.sub, remember: true, ...methods } });
}

// Cognito GET /logout: client_id + logout_uri (a registered sign-out URL), or client_id + redirect_uri +
// response_type (+ the other authorize parameters) to sign in again. No confirmation page.
async function logout(ctx) {
  const q = ctx.query;
  if (q.client_id !== CLIENT_ID) return errorPage(ctx, 400, 'invalid_request', 'Invalid or missing client_id');
  let target;
  if (q.logout_uri !== undefined) {
    if (!POST_LOGOUT_REDIRECT_URIS.includes(q.logout_uri)) return errorPage(ctx, 400, 'redirect_mismatch', 'logout_uri is not a registered sign-out URL');
    target = q.logout_uri;
  } else if (q.redirect_uri !== undefined) {
    if (!REDIRECT_URIS.includes(q.redirect_uri)) return errorPage(ctx, 400, 'redirect_mismatch', 'redirect_uri is not a registered callback URL');
    if (!q.response_type) return errorPage(ctx, 400, 'invalid_request', 'response_type is required with redirect_uri');
    target = `${BASE}/oauth2/authorize?${new URLSearchParams(ctx.querystring).toString()}`;
  } else {
    return errorPage(ctx, 400, 'invalid_request', 'Required parameter logout_uri or redirect_uri is missing');
  }

  const session = await provider.Session.get(ctx);
  if (!session.new) await session.destroy();
  ctx.cookies.set(provider.cookieName('session'), null, { path: '/', httpOnly: true, sameSite: 'lax' });
  ctx.set('Cache-Control', 'no-store');
  ctx.status = 302;
  ctx.redirect(target);
  return undefined;
}

// Entra's and Okta's end-session endpoint (OpenID Connect RP-initiated logout): the optional client_id and id_token_hint are
// checked when present, post_logout_redirect_uri must be registered; no confirmation page.
async function endSession(ctx) {
  const q = ctx.query;
  // Okta refuses a sign-out without the ID token it issued.
  if (OKTA && q.id_token_hint === undefined) return errorPage(ctx, 400, 'invalid_request', 'id_token_hint is required');
  if (q.client_id !== undefined && q.client_id !== CLIENT_ID) return errorPage(ctx, 400, 'invalid_request', 'Invalid client_id');
  if (q.id_token_hint !== undefined) {
    let hint;
    try {
      hint = verifyOwnJwt(q.id_token_hint, { allowExpired: true });
    } catch (e) {
      return errorPage(ctx, 400, 'invalid_request', `id_token_hint: ${e.message}`);
    }
    if (hint.aud !== CLIENT_ID) return errorPage(ctx, 400, 'invalid_request', 'id_token_hint was not issued to this client');
  }
  const target = q.post_logout_redirect_uri;
  if (target !== undefined && !POST_LOGOUT_REDIRECT_URIS.includes(target)) {
    return errorPage(ctx, 400, 'invalid_request', 'post_logout_redirect_uri is not a registered sign-out URL');
  }
  const session = await provider.Session.get(ctx);
  if (!session.new) await session.destroy();
  ctx.cookies.set(provider.cookieName('session'), null, { path: '/', httpOnly: true, sameSite: 'lax' });
  ctx.set('Cache-Control', 'no-store');
  if (target === undefined) return page(ctx, 200, 'Signed out', '<h1>You signed out of your account.</h1>');
  ctx.status = 302;
  ctx.redirect(target);
  return undefined;
}

async function userInfo(ctx) {
  const origin = ctx.get('origin');
  if (origin && CORS_ORIGINS.has(origin)) {
    ctx.set('Access-Control-Allow-Origin', origin);
    ctx.set('Vary', 'Origin');
    ctx.set('Access-Control-Expose-Headers', 'WWW-Authenticate');
  }
  if (ctx.method === 'OPTIONS') {
    ctx.set('Access-Control-Allow-Methods', 'GET,POST');
    ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type');
    ctx.set('Access-Control-Max-Age', '3600');
    ctx.status = 204;
    return;
  }
  if (ctx.method !== 'GET' && ctx.method !== 'POST') { ctx.status = 405; return; }
  ctx.set('Cache-Control', 'no-store');
  const fail = (error, description) => {
    ctx.status = 401;
    ctx.set('WWW-Authenticate', `Bearer error="${error}", error_description="${description}"`);
    ctx.body = { error, error_description: description };
  };
  const m = /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'));
  if (!m) return fail('invalid_request', 'Access token is missing');
  let claims;
  try {
    claims = verifyOwnJwt(m[1]);
  } catch (e) {
    return fail('invalid_token', e.message);
  }
  if (claims.token_use !== 'access' || claims.client_id !== CLIENT_ID) return fail('invalid_token', 'Invalid access token');
  if (!String(claims.scope || '').split(' ').includes('openid')) return fail('invalid_token', 'Access token does not contain openid scope');
  const user = USERS.bySub.get(claims.sub);
  if (!user) return fail('invalid_token', 'User does not exist.');
  ctx.body = {
    sub: user.sub,
    email_verified: String(user.email_verified),
    email: user.email,
    username: user.username,
  };
}

// POST /test/age-sessions seconds=N: every live session's sign-in moves N seconds into the past, so the tokens of
// its next silent sign-in carry an old auth_time and max_age counts it as that old.
function ageSessions(ctx, form) {
  const seconds = Number(form.seconds);
  if (ctx.method !== 'POST' || !Number.isInteger(seconds) || seconds <= 0) {
    ctx.status = 400;
    ctx.body = { error: 'invalid_request', error_description: 'POST seconds=<positive integer>' };
    return;
  }
  let aged = 0;
  for (const key of STORE.keys()) {
    const session = key.startsWith('Session:') ? storeGet(key) : undefined;
    if (session?.loginTs) { session.loginTs -= seconds; aged += 1; }
  }
  ctx.body = { aged };
}

// oidc-provider adds RFC 9207 "iss" to authorization responses; Cognito does not.
const REDIRECT_BASES = new Set(REDIRECT_URIS.map((r) => { const u = new URL(r); return `${u.origin}${u.pathname}`; }));
function stripIss(location) {
  try {
    const u = new URL(location);
    if (!REDIRECT_BASES.has(`${u.origin}${u.pathname}`) || !u.searchParams.has('iss')) return location;
    u.searchParams.delete('iss');
    return u.href;
  } catch {
    return location;
  }
}

function addAtHash(idToken, accessToken) {
  const [h, p] = idToken.split('.');
  const header = b64json(h);
  const key = KEY_OBJECTS.get(header.kid);
  if (!key) return idToken;
  const atHash = crypto.createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url');
  return signJwt({ kid: header.kid, alg: 'RS256' }, { at_hash: atHash, ...b64json(p) }, key.private);
}

provider.use(async (ctx, next) => {
  const p = ctx.path;
  const mounted = Boolean(ctx.req.originalUrl); // request came in under /$POOL_ID

  if (mounted) {
    const keys = (COGNITO && p === '/.well-known/jwks.json') || (OKTA && p === '/v1/keys');
    if (p === '/.well-known/openid-configuration' || keys) {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') { ctx.status = 405; return; }
      ctx.set('Access-Control-Allow-Origin', '*');
      ctx.set('Cache-Control', 'public, max-age=60');
      ctx.body = keys ? PUBLIC_JWKS : discovery();
      return;
    }
    if (OKTA && p === '/v1/logout') {
      if (ctx.method !== 'GET') { ctx.status = 405; return; }
      await endSession(ctx);
      return;
    }
    ctx.status = 404;
    ctx.body = { error: 'not_found' };
    return;
  }

  const im = /^\/interaction\/([\w-]+)$/.exec(p);
  if (im) { await interaction(ctx, im[1]); return; }
  if (ENTRA && p === ENTRA_JWKS_PATH) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') { ctx.status = 405; return; }
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.set('Cache-Control', 'public, max-age=60');
    ctx.body = PUBLIC_JWKS;
    return;
  }
  if (ENTRA && p === ENTRA_LOGOUT_PATH) {
    if (ctx.method !== 'GET') { ctx.status = 405; return; }
    await endSession(ctx);
    return;
  }
  if (COGNITO && p === '/logout') {
    if (ctx.method !== 'GET') { ctx.status = 405; return; }
    await logout(ctx);
    return;
  }
  if (p === '/oauth2/userInfo') { await userInfo(ctx); return; }
  if (p === '/test/age-sessions') { ageSessions(ctx, await readForm(ctx.req)); return; }
  if (!/^\/oauth2\/(authorize(\/[\w-]+)?|token|revoke)$/.test(p)) {
    ctx.status = 404;
    ctx.body = { error: 'not_found' };
    return;
  }

  await next();

  // Post-processing to match Cognito's responses.
  if (p.startsWith('/oauth2/authorize') && ctx.status >= 300 && ctx.status < 400) {
    const loc = ctx.response.get('Location');
    if (loc) ctx.set('Location', stripIss(loc));
  }
  if (p === '/oauth2/token' && ctx.status === 200 && ctx.body && typeof ctx.body === 'object' && ctx.body.access_token) {
    const b = ctx.body;
    const refresh = ctx.oidc?.params?.grant_type === 'refresh_token';
    ctx.body = Object.fromEntries(Object.entries({
      id_token: b.id_token ? addAtHash(b.id_token, b.access_token) : undefined,
      access_token: b.access_token,
      refresh_token: refresh ? undefined : b.refresh_token,
      expires_in: b.expires_in,
      token_type: b.token_type,
    }).filter(([, v]) => v !== undefined));
  }
});

// ------------------------------------------------------------------ HTTP server

const callback = provider.callback();
const POOL_PREFIX = ISSUER_PATH;

const server = http.createServer((req, res) => {
  const qi = req.url.indexOf('?');
  const pathname = qi === -1 ? req.url : req.url.slice(0, qi);
  if (pathname === POOL_PREFIX || pathname.startsWith(`${POOL_PREFIX}/`)) {
    // Mounted under the issuer path: oidc-provider derives its mount path from originalUrl vs url.
    req.originalUrl = req.url;
    req.url = req.url.slice(POOL_PREFIX.length) || '/';
    if (req.url.startsWith('?')) req.url = `/${req.url}`;
  }
  callback(req, res);
});

server.listen(PORT, HOST, () => {
  process.stdout.write(`ready ${ISSUER}\n`);
});

function shutdown() {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

// Differences from Amazon Cognito (deliberate or unavoidable):
// * Plain http on 127.0.0.1 and a local issuer: the worker must take issuer + JWKS URL from configuration.
// * PKCE is mandatory (Cognito treats it as optional); only S256. Only the code flow; scopes openid/email/profile
//   (other scopes are silently dropped). No /login, /signup, /forgotPassword, /saml2, federation, MFA, prompt UI.
// * Authorization redirects are 303 (Cognito: 302); error redirects carry error_description.
// * Token-endpoint errors carry error_description (Cognito: {"error":"invalid_grant"} only).
// * A code whose exchange failed (wrong code_verifier / redirect_uri) stays usable until consumed or expired;
//   replaying a consumed code also revokes the refresh token it produced (oidc-provider behaviour).
// * The access token has no aud: oidc-provider insists on one, so it is given a Symbol that JSON drops.
// * at_hash is added by re-signing the ID token in the token response (same key, same claims otherwise).
// * jti values are UUIDs; origin_jti/event_id are UUIDs derived from the per-sign-in grant (stable across refresh).
// * A silent re-auth keeps auth_time of the original sign-in (OIDC semantics) but gets new origin_jti/event_id.
// * userInfo returns only sub, email_verified ("true"/"false" strings, as Cognito), email, username.
// * Discovery is a Cognito-like subset plus code_challenge_methods_supported and revocation_endpoint.
// * Cookies (_session, _interaction, _interaction_resume) are host-scoped: on 127.0.0.1 they are shared with any
//   other local server regardless of port (cookies ignore ports).
