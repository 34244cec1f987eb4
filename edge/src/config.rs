//! Loads the typed [`Config`] from wrangler vars/secrets once per isolate.

use std::cell::OnceCell;
use std::rc::Rc;

use ringi_core::config::{Config, ConfigError};
use worker::Env;

thread_local! {
    static CONFIG: OnceCell<Rc<Config>> = const { OnceCell::new() };
}

pub fn load(env: &Env) -> Result<Rc<Config>, ConfigError> {
    if let Some(c) = CONFIG.with(|c| c.get().cloned()) {
        return Ok(c);
    }
    let cfg = Rc::new(Config::from_lookup(|name| {
        env.secret(name).map(|s| s.to_string()).or_else(|_| env.var(name).map(|v| v.to_string())).ok()
    })?);
    CONFIG.with(|c| {
        let _ = c.set(cfg.clone());
    });
    Ok(cfg)
}
