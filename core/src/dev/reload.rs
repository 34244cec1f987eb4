//! The dev-only live reload (`DEV_RELOAD=on`, `make dev`): every page the worker serves names a small script
//! that asks the worker which build it runs and reloads the page once that changes, so an edit to the worker
//! or the SPA reaches an open browser without restarting anything. A script file of the worker's own, not an
//! inline one: the page's CSP stays what production sends.

/// The script every page names under `DEV_RELOAD`.
pub const SCRIPT_PATH: &str = "/__dev/reload.js";
/// The build the worker runs now: its isolate and the SPA's pages as stored.
pub const BUILD_PATH: &str = "/__dev/build";

/// Polls [`BUILD_PATH`] each second and reloads when it differs from the build the page was served with
/// (the script element's `data-build`). A failed poll (the worker restarting) is just tried again.
pub const SCRIPT: &str = r#"// Dev only (DEV_RELOAD): reloads this page when the worker or the SPA was rebuilt.
const served = document.currentScript.dataset.build;
async function poll() {
  try {
    const now = await (await fetch("/__dev/build", { cache: "no-store" })).text();
    if (now && now !== served) {
      // The service worker would answer the reload with the shell it cached from the build before: without it, the
      // reload loads the new build (whose page registers the worker again).
      await (await navigator.serviceWorker?.getRegistration())?.unregister().catch(() => {});
      return location.reload();
    }
  } catch (restarting) {}
  setTimeout(poll, 1000);
}
setTimeout(poll, 1000);
"#;

/// `DEV_RELOAD`: off in production.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DevReload {
    #[default]
    Off,
    On,
}

impl DevReload {
    pub fn parse(v: &str) -> Result<Self, String> {
        match v.trim() {
            "off" => Ok(Self::Off),
            "on" => Ok(Self::On),
            other => Err(format!("{other:?}: on or off")),
        }
    }

    pub fn enabled(self) -> bool {
        self == Self::On
    }
}

/// The page with the reload script named before `</head>`, tagged with the build it was served from.
/// `None` when the document has no `</head>`.
pub fn with_reload_script(html: &str, build: &str) -> Option<String> {
    let at = html.find("</head>")?;
    let build: String = build.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    Some(format!("{}<script src=\"{SCRIPT_PATH}\" data-build=\"{build}\"></script>\n{}", &html[..at], &html[at..]))
}

/// The build identity: the isolate (a new one after the worker was rebuilt) and a digest of the SPA's pages.
pub fn build_id(isolate: u64, pages: &[&str]) -> String {
    // FNV-1a: a change detector, not a security boundary.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in pages.iter().flat_map(|p| p.bytes().chain([0])) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{isolate:016x}-{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_the_script_with_its_build_and_a_change_is_a_new_build() {
        let id = build_id(7, &["<html><head></head></html>", "admin"]);
        let page = with_reload_script("<html><head><title>x</title></head><body></body></html>", &id).unwrap();
        assert!(page.contains(&format!("<script src=\"/__dev/reload.js\" data-build=\"{id}\"></script>\n</head>")));
        assert_ne!(build_id(7, &["<html><head></head></html>", "admin2"]), id, "the SPA rebuilt");
        assert_ne!(build_id(8, &["<html><head></head></html>", "admin"]), id, "the worker restarted");
        assert_eq!(build_id(7, &["<html><head></head></html>", "admin"]), id);
        assert!(with_reload_script("<p>no head</p>", &id).is_none());
        assert!(with_reload_script("<head></head>", "a\"><script>").unwrap().contains("data-build=\"ascript\""));
        assert_eq!(DevReload::parse("on"), Ok(DevReload::On));
        assert!(DevReload::parse("yes").is_err());
    }
}
