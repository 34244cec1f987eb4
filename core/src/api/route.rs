//! The worker's routes as data: [`Route::ALL`] is the table (checked against `docs/openapi.yaml` by
//! `core/tests/openapi_routes.rs`), [`Route::parse`] maps a method and path onto it.

use crate::base::error::ApiError;
use crate::base::ids::ApprovalId;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    None,
    /// A registration credential: API key or client-credentials token.
    Machine,
    /// A person's JWT.
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    SpaConfig,
    /// The worker's own OpenID Connect discovery document and keys (federation with AWS).
    IssuerDiscovery,
    IssuerKeys,
    Register,
    Inbox,
    Approval,
    Decision,
    Audit,
    Delegation,
    Principals,
    OutOfOffice,
    Push,
}

/// One operation: a method on a path template (OpenAPI form, `{id}` = an approval ID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    pub method: &'static str,
    pub path: &'static str,
    pub endpoint: Endpoint,
    pub auth: Auth,
}

const fn op(method: &'static str, path: &'static str, endpoint: Endpoint, auth: Auth) -> RouteSpec {
    RouteSpec { method, path, endpoint, auth }
}

/// A request the table answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Health,
    SpaConfig,
    /// The worker's own OpenID Connect discovery document and keys (federation with AWS).
    IssuerDiscovery,
    IssuerKeys,
    Register,
    Inbox,
    Approval(ApprovalId),
    Decision(ApprovalId),
    /// The operators' export of the event log.
    Audit,
    /// An approver hands their slot to another principal.
    Delegation(ApprovalId),
    /// An operator replaces the listed principals.
    Principals(ApprovalId),
    /// The caller's out-of-office setting (GET, PUT, DELETE).
    OutOfOffice,
    /// This device's push subscription (PUT, DELETE).
    Push,
}

/// A request the table does not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unrouted {
    /// No such path: `no_route`.
    NoPath,
    /// The path exists with other methods: `method_not_allowed` listing them.
    Method { allow: String },
    /// The path's `{id}` cannot be an approval ID: a 404, after the route's authentication (so that a caller
    /// without credentials learns nothing from it).
    NotAnId { auth: Auth },
}

impl From<Unrouted> for ApiError {
    fn from(u: Unrouted) -> Self {
        match u {
            Unrouted::NoPath => ApiError::NoRoute,
            Unrouted::Method { allow } => ApiError::MethodNotAllowed { allow },
            Unrouted::NotAnId { .. } => ApiError::NotFound,
        }
    }
}

/// Paths the worker answers itself; everything else is a static asset of the SPA.
pub fn is_api(path: &str) -> bool {
    path.starts_with("/api/")
        || path == "/api"
        || path == "/healthz"
        || path == "/config.json"
        || path.starts_with("/.well-known/")
}

/// `path`'s segments against a template's; `Some(id segment)` (or `Some("")` without one) on a match.
fn match_template<'p>(template: &str, segments: &[&'p str]) -> Option<&'p str> {
    let parts: Vec<&str> = template.split('/').skip(1).collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut id = "";
    for (t, s) in parts.iter().zip(segments) {
        match *t {
            "{id}" => id = s,
            t if t == *s => {}
            _ => return None,
        }
    }
    Some(id)
}

impl Route {
    pub const ALL: &'static [RouteSpec] = &[
        op("GET", "/healthz", Endpoint::Health, Auth::None),
        op("HEAD", "/healthz", Endpoint::Health, Auth::None),
        op("GET", "/config.json", Endpoint::SpaConfig, Auth::None),
        op("HEAD", "/config.json", Endpoint::SpaConfig, Auth::None),
        op("GET", "/.well-known/openid-configuration", Endpoint::IssuerDiscovery, Auth::None),
        op("GET", "/.well-known/jwks.json", Endpoint::IssuerKeys, Auth::None),
        op("GET", "/api/v1/approvals", Endpoint::Inbox, Auth::User),
        op("POST", "/api/v1/approvals", Endpoint::Register, Auth::Machine),
        op("GET", "/api/v1/approvals/{id}", Endpoint::Approval, Auth::User),
        op("POST", "/api/v1/approvals/{id}/decision", Endpoint::Decision, Auth::User),
        op("GET", "/api/v1/audit", Endpoint::Audit, Auth::User),
        op("POST", "/api/v1/approvals/{id}/delegation", Endpoint::Delegation, Auth::User),
        op("PUT", "/api/v1/approvals/{id}/principals", Endpoint::Principals, Auth::User),
        op("GET", "/api/v1/me/out-of-office", Endpoint::OutOfOffice, Auth::User),
        op("PUT", "/api/v1/me/out-of-office", Endpoint::OutOfOffice, Auth::User),
        op("DELETE", "/api/v1/me/out-of-office", Endpoint::OutOfOffice, Auth::User),
        op("PUT", "/api/v1/me/push", Endpoint::Push, Auth::User),
        op("DELETE", "/api/v1/me/push", Endpoint::Push, Auth::User),
    ];

    /// Maps the raw method (methods a platform does not know must not become GET) and the URL path.
    /// A trailing `/` is ignored.
    pub fn parse(method: &str, path: &str) -> Result<Self, Unrouted> {
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        let on_path: Vec<(&RouteSpec, &str)> =
            Self::ALL.iter().filter_map(|r| match_template(r.path, &segments).map(|id| (r, id))).collect();
        let Some(&(spec, id)) = on_path.iter().find(|(r, _)| r.method == method) else {
            return Err(match on_path.is_empty() {
                true => Unrouted::NoPath,
                false => {
                    Unrouted::Method { allow: on_path.iter().map(|(r, _)| r.method).collect::<Vec<_>>().join(", ") }
                }
            });
        };
        let id = || ApprovalId::parse(id).map_err(|_| Unrouted::NotAnId { auth: spec.auth });
        Ok(match spec.endpoint {
            Endpoint::Health => Self::Health,
            Endpoint::SpaConfig => Self::SpaConfig,
            Endpoint::IssuerDiscovery => Self::IssuerDiscovery,
            Endpoint::IssuerKeys => Self::IssuerKeys,
            Endpoint::Register => Self::Register,
            Endpoint::Inbox => Self::Inbox,
            Endpoint::Approval => Self::Approval(id()?),
            Endpoint::Decision => Self::Decision(id()?),
            Endpoint::Audit => Self::Audit,
            Endpoint::Delegation => Self::Delegation(id()?),
            Endpoint::Principals => Self::Principals(id()?),
            Endpoint::OutOfOffice => Self::OutOfOffice,
            Endpoint::Push => Self::Push,
        })
    }

    pub fn endpoint(&self) -> Endpoint {
        match self {
            Self::Health => Endpoint::Health,
            Self::SpaConfig => Endpoint::SpaConfig,
            Self::IssuerDiscovery => Endpoint::IssuerDiscovery,
            Self::IssuerKeys => Endpoint::IssuerKeys,
            Self::Register => Endpoint::Register,
            Self::Inbox => Endpoint::Inbox,
            Self::Approval(_) => Endpoint::Approval,
            Self::Decision(_) => Endpoint::Decision,
            Self::Audit => Endpoint::Audit,
            Self::Delegation(_) => Endpoint::Delegation,
            Self::Principals(_) => Endpoint::Principals,
            Self::OutOfOffice => Endpoint::OutOfOffice,
            Self::Push => Endpoint::Push,
        }
    }

    pub fn auth(&self) -> Auth {
        let endpoint = self.endpoint();
        Self::ALL.iter().find(|r| r.endpoint == endpoint).map_or(Auth::User, |r| r.auth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "abcdefghijklmnopqrstuv";

    #[test]
    fn methods_and_paths_map_onto_the_table() {
        let id = ApprovalId::parse(ID).unwrap();
        assert_eq!(Route::parse("GET", "/healthz"), Ok(Route::Health));
        assert_eq!(Route::parse("HEAD", "/config.json"), Ok(Route::SpaConfig));
        assert_eq!(Route::parse("POST", "/api/v1/approvals"), Ok(Route::Register));
        assert_eq!(Route::parse("GET", "/.well-known/jwks.json"), Ok(Route::IssuerKeys));
        assert!(is_api("/.well-known/openid-configuration"));
        assert_eq!(Route::parse("GET", "/api/v1/approvals/"), Ok(Route::Inbox), "a trailing slash is ignored");
        assert_eq!(Route::parse("GET", &format!("/api/v1/approvals/{ID}")), Ok(Route::Approval(id.clone())));
        assert_eq!(Route::parse("POST", &format!("/api/v1/approvals/{ID}/decision")), Ok(Route::Decision(id)));
        assert_eq!(Route::Register.auth(), Auth::Machine);
        let id = ApprovalId::parse(ID).unwrap();
        assert_eq!(
            Route::parse("POST", &format!("/api/v1/approvals/{ID}/delegation")),
            Ok(Route::Delegation(id.clone()))
        );
        assert_eq!(Route::parse("PUT", &format!("/api/v1/approvals/{ID}/principals")), Ok(Route::Principals(id)));
        assert_eq!(Route::parse("DELETE", "/api/v1/me/out-of-office"), Ok(Route::OutOfOffice));
        assert_eq!(Route::OutOfOffice.auth(), Auth::User);
        assert_eq!(Route::parse("PUT", "/api/v1/me/push"), Ok(Route::Push));
        assert_eq!(Route::Push.auth(), Auth::User);
        assert_eq!(Route::Inbox.auth(), Auth::User);
        assert_eq!(Route::parse("GET", "/api/v1/audit"), Ok(Route::Audit));
        assert_eq!(Route::Audit.auth(), Auth::User);
    }

    #[test]
    fn what_the_table_does_not_answer() {
        let allow = |a: &str| Err(Unrouted::Method { allow: a.into() });
        assert_eq!(Route::parse("DELETE", "/api/v1/approvals"), allow("GET, POST"));
        assert_eq!(Route::parse("PROPFIND", "/healthz"), allow("GET, HEAD"));
        assert_eq!(Route::parse("GET", &format!("/api/v1/approvals/{ID}/decision")), allow("POST"));
        assert_eq!(Route::parse("GET", "/api/v2/approvals"), Err(Unrouted::NoPath));
        assert_eq!(Route::parse("GET", "/api/v1/approvals/x/y/z"), Err(Unrouted::NoPath));
        assert_eq!(Route::parse("GET", "/api/v1/approvals/short"), Err(Unrouted::NotAnId { auth: Auth::User }));
        assert_eq!(ApiError::from(Unrouted::NotAnId { auth: Auth::User }), ApiError::NotFound);
        assert!(is_api("/api/v1/approvals") && is_api("/healthz") && !is_api("/a/xyz") && !is_api("/apix"));
    }
}
