//! Where the app is: the page its path names, the query, and navigation without a page load.
//!
//! The app has a fixed handful of pages, so the path is parsed into a `Page` once per navigation and the shell
//! matches on it. Links inside the app navigate through the History API; every other click stays the browser's:
//! other origins, `rel=external` (a page of the other bundle, which the worker serves), a `target` or `download`
//! attribute, a modifier key or another button, and a fragment on the current page. Own code rather than a router
//! crate: a generic route tree cost the page an emailed link opens more than everything here does.

use leptos::ev;
use leptos::prelude::*;
use ringi_core::base::sign_in::CALLBACK_PATH;
use wasm_bindgen::JsCast;
use web_sys::{HtmlAnchorElement, MouseEvent, Url, UrlSearchParams};

/// A page of the app, from its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Page {
    /// `/`
    Inbox,
    /// `/a/{id}`: one approval (the short link of its mail).
    Approval(String),
    /// The sign-in's return.
    Callback,
    /// `/settings` (the full bundle).
    Settings,
    /// `/audit` (the full bundle).
    Audit,
    NotFound,
}

impl Page {
    pub fn parse(path: &str) -> Self {
        let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
        match path {
            "/" => Self::Inbox,
            "/settings" => Self::Settings,
            "/audit" => Self::Audit,
            _ if path == CALLBACK_PATH => Self::Callback,
            _ => match path.strip_prefix("/a/") {
                Some(id) if !id.is_empty() && !id.contains('/') => Self::Approval(id.to_owned()),
                _ => Self::NotFound,
            },
        }
    }
}

/// The current location, in context from the shell on.
#[derive(Clone, Copy)]
pub struct Location {
    path: RwSignal<String>,
    /// The search string, with its `?` (empty without one).
    search: RwSignal<String>,
}

impl Location {
    /// The location of the address bar, kept in step with it (back/forward, links in the app).
    pub fn provide() -> Self {
        let location = Self { path: RwSignal::new(String::new()), search: RwSignal::new(String::new()) };
        location.read_address_bar();
        // The app lives as long as the page: its listeners are never removed.
        std::mem::forget(window_event_listener(ev::popstate, move |_| location.read_address_bar()));
        std::mem::forget(window_event_listener(ev::click, move |e| location.follow_link(&e)));
        provide_context(location);
        location
    }

    pub fn path(&self) -> String {
        self.path.get()
    }

    /// The value of `key` in the query (tracked).
    pub fn query(&self, key: &str) -> Option<String> {
        self.search.with(|search| UrlSearchParams::new_with_str(search).ok()?.get(key))
    }

    /// Goes to `to` (a path, with its query and fragment) inside the app: a new history entry, or the current one
    /// replaced. A new page starts at its top.
    pub fn navigate(&self, to: &str, replace: bool) {
        let Ok(history) = window().history() else { return };
        let pushed = if replace {
            history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(to))
        } else {
            history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(to))
        };
        if pushed.is_ok() {
            self.read_address_bar();
            window().scroll_to_with_x_and_y(0.0, 0.0);
        }
    }

    fn read_address_bar(&self) {
        let address = window().location();
        let path = address.pathname().unwrap_or_default();
        let search = address.search().unwrap_or_default();
        // Unchanged values do not notify: a query change does not rebuild the page.
        if self.path.with_untracked(|p| *p != path) {
            self.path.set(path);
        }
        if self.search.with_untracked(|s| *s != search) {
            self.search.set(search);
        }
    }

    /// A click on a link to a page of the app becomes a navigation without a load.
    fn follow_link(&self, e: &MouseEvent) {
        if e.default_prevented() || e.button() != 0 || e.meta_key() || e.alt_key() || e.ctrl_key() || e.shift_key() {
            return;
        }
        let Some(link) = e
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|el| el.closest("a[href]").ok().flatten())
            .and_then(|el| el.dyn_into::<HtmlAnchorElement>().ok())
        else {
            return;
        };
        let external = link.get_attribute("rel").is_some_and(|rel| rel.split_whitespace().any(|r| r == "external"));
        if external || link.has_attribute("target") || link.has_attribute("download") {
            return;
        }
        let Ok(url) = Url::new(&link.href()) else { return };
        let here = window().location();
        if url.origin() != here.origin().unwrap_or_default() {
            return;
        }
        let (path, search, hash) = (url.pathname(), url.search(), url.hash());
        let same_page = self.path.with_untracked(|p| *p == path) && self.search.with_untracked(|s| *s == search);
        if same_page && !hash.is_empty() {
            return; // the browser scrolls to the fragment and moves focus there
        }
        e.prevent_default();
        self.navigate(&format!("{path}{search}{hash}"), false);
    }
}

pub fn use_location() -> Location {
    expect_context::<Location>()
}

#[cfg(test)]
mod tests {
    use super::Page;

    #[test]
    fn paths_name_their_pages() {
        assert_eq!(Page::parse("/"), Page::Inbox);
        assert_eq!(Page::parse("/a/abcDEF123_-x"), Page::Approval("abcDEF123_-x".into()));
        assert_eq!(Page::parse("/a/abc/"), Page::Approval("abc".into()));
        assert_eq!(Page::parse("/auth/callback"), Page::Callback);
        assert_eq!(Page::parse("/settings"), Page::Settings);
        assert_eq!(Page::parse("/audit/"), Page::Audit);
        for unknown in ["/a/", "/a", "/a/x/y", "/admin", "/settingsx", "/inbox", ""] {
            assert_eq!(Page::parse(unknown), Page::NotFound, "{unknown}");
        }
    }
}
