//! The identity provider as the configuration describes it: Cognito or any OpenID Connect provider, which
//! token is the bearer, and where its tokens carry the audience, groups, scopes and the email. The checks
//! themselves are `crate::adapters::jwt`.

use crate::base::by_name::serde_by_name;

/// Which Cognito token the API takes as the bearer (`token_use` claim; the SPA sends that one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TokenUse {
    Id,
    #[default]
    Access,
}
serde_by_name!(TokenUse, as_str, parse, "id or access");

impl TokenUse {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Access => "access",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "id" => Some(Self::Id),
            "access" => Some(Self::Access),
            _ => None,
        }
    }
}

/// `EMAIL_VERIFIED`: when the `email` claim is taken as the caller's address (`{email}` approvers match it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EmailPolicy {
    /// `require` (the default): only with `email_verified: true` (a boolean) in the same token.
    #[default]
    RequireVerified,
    /// `trust`: as the provider sends it, for providers that send no `email_verified` but only put addresses
    /// they manage there (an Entra ID tenant's `email`). Refused with the Cognito profile.
    Trust,
}

impl EmailPolicy {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "require" => Some(Self::RequireVerified),
            "trust" => Some(Self::Trust),
            _ => None,
        }
    }
}

/// `SCOPE_CLAIM`: where the granted scopes are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ScopeClaim {
    /// `scope`: one space-separated string (Cognito, RFC 9068).
    #[default]
    Scope,
    /// `scp`: an array of strings (Okta) or a space-separated string (Entra ID).
    Scp,
}

impl ScopeClaim {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "scope" => Some(Self::Scope),
            "scp" => Some(Self::Scp),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Scope => "scope",
            Self::Scp => "scp",
        }
    }
}

/// Where a token's groups, scopes and email are read (the configuration's claim mapping).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMapping {
    /// `GROUPS_CLAIM`: a top-level claim name (`cognito:groups`, `groups`, `roles`,
    /// `https://example.com/groups`); failing that, a dotted path into nested objects (`realm_access.roles`).
    /// Its value must be an array of strings.
    pub groups_claim: String,
    pub email: EmailPolicy,
    pub scope_claim: ScopeClaim,
}

impl Default for ClaimMapping {
    fn default() -> Self {
        Self {
            groups_claim: "cognito:groups".into(),
            email: EmailPolicy::RequireVerified,
            scope_claim: ScopeClaim::Scope,
        }
    }
}

/// How a token shows it was issued for ringi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AudienceRule {
    /// Cognito: `token_use` must be this one; `client_id` (access tokens) or `aud` (ID tokens) must be one of
    /// the rules' client ids.
    Cognito(TokenUse),
    /// OpenID Connect: `aud` (a string or an array) must contain `audience`. The client the token was issued
    /// to (`azp`, else `client_id` (RFC 9068), else `cid` (Okta)) must be one of the rules' client ids; when
    /// the token names none, it is accepted only if `client_required` is false (an ID token with a single
    /// audience carries no `azp`).
    Oidc { audience: String, client_required: bool },
}

/// Which kind of identity provider signs people in (the configuration's provider profile).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IdpProfile {
    /// A Cognito user pool (`COGNITO_ISSUER`): endpoints below `COGNITO_DOMAIN`, Cognito's `/logout`,
    /// `token_use` + `client_id` claims.
    #[default]
    Cognito,
    /// Any OpenID Connect provider (`OIDC_ISSUER`): endpoints from its discovery document, `aud`/`azp`.
    Oidc,
}
serde_by_name!(IdpProfile, as_str, parse, "cognito or oidc");

impl IdpProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cognito => "cognito",
            Self::Oidc => "oidc",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Cognito, Self::Oidc].into_iter().find(|p| p.as_str() == s)
    }
}

/// What a token must satisfy for one purpose (user calls or machine registration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtRules {
    pub issuer: String,
    pub audience: AudienceRule,
    pub client_ids: Vec<String>,
    pub mapping: ClaimMapping,
}
