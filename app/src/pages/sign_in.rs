//! Signing in: the landing card, the trip to the Hosted UI and back (`/auth/callback`), and what is shown
//! when that does not work.

use leptos::prelude::*;
use leptos::task::spawn_local;
use ringi_core::adapters::assets::in_full_bundle;
use ringi_core::base::sign_in::SignInRequirement;
use ringi_sign_in::SignInFailure;

use crate::components::{Block, ChunkMissing, OnDemand, Part, Skeleton};
use crate::context::{tr, use_app, use_title_tr};
use crate::infra::auth::{self, AuthError};

/// Sends the user through the Hosted UI, coming back to the current page. Shown for the instant before the
/// browser leaves; if the API refused a token that was just issued, explains that instead of looping.
/// `step_up`: what a fresh or stronger sign-in must show (an approval's `requireSignIn`).
#[component]
pub fn Reauthenticate(#[prop(default = None)] step_up: Option<SignInRequirement>) -> impl IntoView {
    let ctx = use_app();
    let refused = match ctx.reauthenticate(step_up.as_ref()) {
        Ok(()) => false,
        Err(AuthError::Refused) => true,
        Err(e) => {
            leptos::logging::warn!("ringi: {e}");
            false
        }
    };
    if refused {
        return view! { <SignInProblem detail=AuthError::Refused.to_string() refused=true /> }.into_any();
    }
    use_title_tr(|t| t.redirecting);
    view! {
        <Skeleton
            class="page skeleton"
            testid="redirecting"
            label=|t| t.redirecting
            visible_label=true
            blocks=&[Block::Title, Block::Line, Block::Short]
        />
    }
    .into_any()
}

/// `/` signed out: what ringi is, and a Sign-in button (so that signing out does not bounce straight back to
/// the Hosted UI).
#[component]
pub fn Welcome() -> impl IntoView {
    let ctx = use_app();
    let signed_out = auth::signed_out_explicitly();
    use_title_tr(|t| t.welcome_title);
    view! {
        <section class="page card welcome" aria-labelledby="welcome-title" data-testid="welcome">
            {signed_out
                .then(|| {
                    view! {
                        <p class="notice notice--info" role="status" data-testid="signed-out">
                            {tr(|t| t.signed_out_notice)}
                        </p>
                    }
                })}
            <span class="welcome__mark" lang="ja" aria-hidden="true">
                "稟議"
            </span>
            <h1 id="welcome-title" class="page__title">{tr(|t| t.welcome_title)}</h1>
            <p>{tr(|t| t.welcome_body)}</p>
            <button
                type="button"
                class="button button--primary"
                data-testid="sign-in"
                on:click=move |_| ctx.sign_in(&auth::current_path())
            >
                {tr(|t| t.sign_in)}
            </button>
        </section>
    }
}

/// `/auth/callback`: the page comes in a chunk of its own (boot.js preloads it there beside the app) and waits for
/// the sign-in module, which boot.js fetched as the page arrived. Either one missing shows a retry card (the code
/// is still unused, so the retry completes the same sign-in).
#[component]
pub fn CallbackRoute() -> impl IntoView {
    view! { <OnDemand load=callback_part /> }
}

async fn callback_part() -> Part {
    auth::sign_in_module().await.map_err(|_| ChunkMissing)?;
    callback_page().await
}

#[leptos::wasm_split::wasm_split(sign_in_callback, fallible, wasm_split_path = ::leptos::wasm_split)]
fn callback_page() -> Part {
    Ok(|| view! { <Callback /> }.into_any())
}

/// boot.js has taken `code`/`state` out of the URL (and started the exchange): wait for it and go to the page the
/// sign-in started from.
#[component]
fn Callback() -> impl IntoView {
    let ctx = use_app();
    let location = crate::router::use_location();
    let failure = RwSignal::new(None::<AuthError>);
    use_title_tr(|t| t.signing_in);
    // Runs once and navigates away (a one-shot task, not state to render).
    if let Some(cfg) = ctx.config.get_untracked() {
        spawn_local(async move {
            match auth::completion(&cfg).await {
                Ok(to) => {
                    ctx.user.set(auth::user_name());
                    // The callback runs in the emailed link's bundle: a page of the full bundle is a full-page
                    // load, which the worker answers with the bundle that has it.
                    let path = to.split(['?', '#']).next().unwrap_or_default();
                    if !(in_full_bundle(path) && window().location().replace(&to).is_ok()) {
                        location.navigate(&to, true);
                    }
                }
                // A reload of the callback page of a sign-in that already completed: nothing to do.
                Err(AuthError::Callback(SignInFailure::NoPendingSignIn)) if auth::bearer().is_some() => {
                    location.navigate("/", true)
                }
                Err(e) => {
                    leptos::logging::warn!("ringi: sign-in: {e}");
                    let _ = failure.try_set(Some(e));
                }
            }
        });
    }
    move || match failure.get() {
        None => view! {
            <Skeleton
                class="page skeleton"
                testid="signing-in"
                label=|t| t.signing_in
                visible_label=true
                blocks=&[Block::Title, Block::Line]
            />
        }
        .into_any(),
        Some(e) => view! { <SignInProblem detail=e.to_string() refused=false /> }.into_any(),
    }
}

/// The sign-in could not be completed (or its token was refused): explain, and offer to sign in again.
#[component]
fn SignInProblem(detail: String, refused: bool) -> impl IntoView {
    let ctx = use_app();
    use_title_tr(|t| t.sign_in_failed_title);
    let again = move |_| {
        auth::forget();
        let to = if refused { auth::current_path() } else { "/".to_owned() };
        ctx.sign_in(&to);
    };
    view! {
        <section
            class="page card card--error"
            role="alert"
            aria-labelledby="signin-error-title"
            data-testid="sign-in-error"
        >
            <h1 id="signin-error-title" class="page__title">{tr(|t| t.sign_in_failed_title)}</h1>
            <p>{move || if refused { ctx.texts().sign_in_refused_body } else { ctx.texts().sign_in_failed_body }}</p>
            <p class="card__detail">
                <code>{detail}</code>
            </p>
            <button type="button" class="button button--primary" data-testid="sign-in" on:click=again>
                {tr(|t| t.sign_in)}
            </button>
        </section>
    }
}
