//! The sign-in sections: the identity provider (Cognito or any OpenID Connect provider), how its tokens are
//! read, and who may register approvals (clients and API keys).

use super::vars::{url, ConfigError, Vars};
use crate::adapters::idp::{ClaimMapping, EmailPolicy, IdpProfile, ScopeClaim, TokenUse};

pub(super) struct Idp {
    pub profile: IdpProfile,
    pub issuer: String,
    pub jwks_url: Option<String>,
    pub client_id: String,
    pub audience: String,
    pub token_use: TokenUse,
    pub mapping: ClaimMapping,
    pub sign_in_scopes: String,
    pub cognito_domain: String,
}

/// `COGNITO_ISSUER` or `OIDC_ISSUER` and the settings of that profile (a setting of the other profile is a
/// mistake, not something to ignore silently).
pub(super) fn idp(v: &Vars) -> Result<Idp, ConfigError> {
    let (profile, issuer_var, issuer) = match (v.opt("COGNITO_ISSUER"), v.opt("OIDC_ISSUER")) {
        (Some(i), None) => (IdpProfile::Cognito, "COGNITO_ISSUER", i),
        (None, Some(i)) => (IdpProfile::Oidc, "OIDC_ISSUER", i),
        (Some(_), Some(_)) => {
            return Err(ConfigError::Invalid(
                "OIDC_ISSUER",
                "set COGNITO_ISSUER (a Cognito user pool) or OIDC_ISSUER (any OpenID Connect provider), not both"
                    .into(),
            ))
        }
        (None, None) => return Err(ConfigError::Missing("COGNITO_ISSUER (or OIDC_ISSUER)")),
    };
    // Exact `iss` comparison: the value is kept as given, only its scheme is checked.
    super::vars::check_url(issuer_var, &issuer)?;
    let cognito = profile == IdpProfile::Cognito;
    let only_for = |name: &'static str, ok: bool, why: &str| -> Result<(), ConfigError> {
        if !ok && v.opt(name).is_some() {
            return Err(ConfigError::Invalid(name, why.into()));
        }
        Ok(())
    };
    only_for("COGNITO_CLIENT_ID", cognito, "is for a Cognito user pool: with OIDC_ISSUER set OIDC_CLIENT_ID")?;
    only_for(
        "COGNITO_DOMAIN",
        cognito,
        "is for a Cognito user pool: with OIDC_ISSUER the endpoints come from the issuer's discovery document",
    )?;
    only_for("OIDC_CLIENT_ID", !cognito, "is for OIDC_ISSUER: a Cognito user pool's client is COGNITO_CLIENT_ID")?;
    only_for("OIDC_AUDIENCE", !cognito, "is for OIDC_ISSUER: Cognito tokens are checked on client_id and token_use")?;
    let jwks_url = match v.opt("JWKS_URL") {
        Some(u) => Some(url("JWKS_URL", u)?),
        None if cognito => Some(format!("{}/.well-known/jwks.json", issuer.trim_end_matches('/'))),
        None => None,
    };
    let client_id = v.req(if cognito { "COGNITO_CLIENT_ID" } else { "OIDC_CLIENT_ID" })?;
    let token_use = match v.opt("TOKEN_USE") {
        None => TokenUse::Access,
        Some(t) => {
            TokenUse::parse(&t).ok_or_else(|| ConfigError::Invalid("TOKEN_USE", "must be id or access".into()))?
        }
    };
    let audience = v.opt("OIDC_AUDIENCE").unwrap_or_else(|| client_id.clone());
    if !cognito && token_use == TokenUse::Id && audience != client_id {
        return Err(ConfigError::Invalid(
            "OIDC_AUDIENCE",
            "with TOKEN_USE=id the bearer is an ID token, whose aud is the client (OIDC_CLIENT_ID)".into(),
        ));
    }
    let mapping = claim_mapping(v, cognito)?;
    let sign_in_scopes = v
        .opt("SIGN_IN_SCOPES")
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "openid email profile".into());
    if !sign_in_scopes.split(' ').any(|s| s == "openid") {
        return Err(ConfigError::Invalid("SIGN_IN_SCOPES", "must include openid".into()));
    }
    let cognito_domain = v.url("COGNITO_DOMAIN")?.unwrap_or_default();
    Ok(Idp { profile, issuer, jwks_url, client_id, audience, token_use, mapping, sign_in_scopes, cognito_domain })
}

/// Where groups, scopes and the email are read (`GROUPS_CLAIM`, `EMAIL_VERIFIED`, `SCOPE_CLAIM`).
fn claim_mapping(v: &Vars, cognito: bool) -> Result<ClaimMapping, ConfigError> {
    let groups_claim =
        v.opt("GROUPS_CLAIM").unwrap_or_else(|| if cognito { "cognito:groups" } else { "groups" }.to_owned());
    if groups_claim.chars().any(char::is_whitespace) {
        return Err(ConfigError::Invalid("GROUPS_CLAIM", "a claim name or dotted path, no spaces".into()));
    }
    let email = match v.opt("EMAIL_VERIFIED") {
        None => EmailPolicy::RequireVerified,
        Some(e) => EmailPolicy::parse(&e)
            .ok_or_else(|| ConfigError::Invalid("EMAIL_VERIFIED", "must be require or trust".into()))?,
    };
    if cognito && email == EmailPolicy::Trust {
        return Err(ConfigError::Invalid(
            "EMAIL_VERIFIED",
            "trust is for providers that send no email_verified; Cognito does, and an unverified Cognito \
             address may be anyone's"
                .into(),
        ));
    }
    let scope_claim = match v.opt("SCOPE_CLAIM") {
        None => ScopeClaim::Scope,
        Some(s) => {
            ScopeClaim::parse(&s).ok_or_else(|| ConfigError::Invalid("SCOPE_CLAIM", "must be scope or scp".into()))?
        }
    };
    if cognito && scope_claim == ScopeClaim::Scp {
        return Err(ConfigError::Invalid("SCOPE_CLAIM", "Cognito tokens carry their scopes in scope".into()));
    }
    Ok(ClaimMapping { groups_claim, email, scope_claim })
}

/// Who may register: `REGISTER_CLIENT_IDS` (no fallback to the SPA's client: it signs in people, and people
/// do not register) and `REGISTER_API_KEYS` (SHA-256 hex digests, lower-cased).
pub(super) fn registrants(v: &Vars) -> Result<(Vec<String>, Vec<String>), ConfigError> {
    let client_ids = v.list("REGISTER_CLIENT_IDS");
    let key_hashes = v.list("REGISTER_API_KEYS").into_iter().map(|h| h.to_ascii_lowercase()).collect::<Vec<_>>();
    if let Some(bad) = key_hashes.iter().find(|h| h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit())) {
        return Err(ConfigError::Invalid(
            "REGISTER_API_KEYS",
            format!("entry of length {} is not a SHA-256 hex digest", bad.len()),
        ));
    }
    Ok((client_ids, key_hashes))
}
