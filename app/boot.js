// Starts the ringi SPA without an inline script, so the Content-Security-Policy needs no 'unsafe-inline'
// (script-src 'self' 'wasm-unsafe-eval'). Trunk writes the hashed names of the wasm-bindgen JS and the wasm
// into <meta name="ringi-js"> / <meta name="ringi-wasm"> (Trunk.toml `pattern_script`); this module is itself
// processed by Trunk (hashed file name + integrity attribute).
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute("content");
// The approval ID of a short link (`/a/{id}`, as the link reads), or undefined on any other page.
const shortLinkId = () => /^\/a\/([^/]+)$/.exec(location.pathname)?.[1];
// This tab's session as app/src/infra/auth.rs keeps it (null when signed out).
const storedSession = () => JSON.parse(sessionStorage.getItem("ringi.session") || "null");

function showFailure(error) {
  console.error("ringi: the application could not start", error);
  const status = document.getElementById("boot-status");
  if (status) {
    const ja = (navigator.language || "").toLowerCase().startsWith("ja");
    status.textContent = ja
      ? "アプリを起動できませんでした。ページを再読み込みしてください。"
      : "The app could not start. Please reload the page.";
    status.classList.add("boot__status--error");
  }
}

// A short link opened with a session in this tab: ask for the approval now, while the wasm downloads, instead
// of after the app has started. The app takes this response (app/src/infra/api.rs `take_prefetched`) when it asks
// for the same URL; anything unexpected here just means the app asks itself. The session's shape and expiry
// margin are those of app/src/infra/auth.rs.
function prefetchApproval() {
  const id = shortLinkId();
  if (!id) return;
  const session = storedSession();
  if (typeof session?.bearer !== "string" || !(session.expiresAt - 30_000 > Date.now())) return;
  const url = `/api/v1/approvals/${encodeURIComponent(decodeURIComponent(id))}`;
  const response = fetch(url, {
    headers: { Authorization: `Bearer ${session.bearer}`, Accept: "application/json" },
    cache: "no-store",
    credentials: "same-origin",
  });
  response.catch(() => {});
  globalThis.ringiPrefetch = { url, response };
  // Copied before the app can read it (this callback is registered first).
  response
    .then((r) => (r.ok ? r.clone().json() : null))
    .then((view) => view && showPreview(view))
    .catch(() => {});
}

// While the wasm still downloads (seconds on a slow phone network), the prefetched approval is shown read-only in
// the start-up placeholder: title, summary, who asked, expiry, as plain text. The app replaces the placeholder
// when it starts and shows the same facts with the decision form (app/src/pages/approval/overview.rs).
function showPreview(view) {
  const boot = document.getElementById("boot");
  if (!boot || typeof view.title !== "string") return;
  const config = JSON.parse(document.getElementById("ringi-config")?.textContent || "null");
  const ja = uiLanguage(config || {}) === "ja";
  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const card = el("article", "card boot-preview");
  card.dataset.testid = "approval-preview";
  card.setAttribute("aria-busy", "true");
  card.append(el("h1", "page__title", view.title));
  if (typeof view.summary === "string" && view.summary) {
    const summary = view.summary.length > 600 ? `${view.summary.slice(0, 600)}…` : view.summary;
    card.append(el("p", "boot-preview__summary", summary));
  }
  const facts = el("dl", "facts");
  const fact = (label, value) => {
    if (typeof value !== "string" || !value) return;
    const row = el("div", "facts__row");
    row.append(el("dt", "", label), el("dd", "", value));
    facts.append(row);
  };
  const requestedBy = view.context?.requestedBy;
  fact(ja ? "依頼者" : "Requested by", typeof requestedBy === "string" ? requestedBy : undefined);
  const expires = Date.parse(view.expiresAt);
  if (view.status === "pending" && !Number.isNaN(expires)) {
    const format = new Intl.DateTimeFormat(ja ? "ja-JP" : "en", { dateStyle: "medium", timeStyle: "short" });
    fact(ja ? "期限" : "Expires", format.format(expires));
  }
  if (facts.childElementCount) card.append(facts);
  // The placeholder's status line moves along: a start-up failure is reported there, before or after this.
  const status = document.getElementById("boot-status") || el("p", "boot__status");
  const decides = mayDecide(view);
  if (!status.classList.contains("boot__status--error")) {
    // With boot.js's own form below, what is still coming is the rest of the page (history, timeline…).
    status.textContent = decides ? (ja ? "ページの残りを読み込み中…" : "Loading the rest of the page…")
      : (ja ? "決裁フォームを読み込み中…" : "Loading the decision form…");
  }
  card.append(status);
  boot.classList.add("boot--preview");
  boot.replaceChildren(card);
  if (decides) {
    bootForm = new BootForm(view, ja ? TEXTS.ja : TEXTS.en);
    boot.append(bootForm.section);
  }
}

// The decision form before the wasm: a phone on a slow network can approve or reject as soon as the approval is
// readable, seconds before the app has downloaded. It is the app's form in plain DOM (same fields, controls, ids
// prefixed `boot-`, texts, confirmation and POST); the browser's constraint checks stand in for the app's own
// (the worker checks every field again and names the one it refuses). When the wasm is ready the app takes over
// (`handOver`): what was typed goes on through the app's draft (app/src/pages/approval/form_state.rs), a decision
// on its way is waited for, and a sent one makes the app load the approval afresh.
let bootForm = null;

// The app's texts for this form (app/src/i18n/{en,ja}.rs; a test of the app holds them equal).
const TEXTS = {
  en: {
    form_heading: "Your decision",
    required: "required",
    choose: "Choose…",
    comment_label: "Comment",
    comment_help: "Optional. Passed to the workflow and kept in the history.",
    approve: "Approve",
    reject: "Reject",
    decide_hint: "You will be asked to confirm. Nothing is decided until then.",
    confirm_approve_title: "Approve this request?",
    confirm_reject_title: "Reject this request?",
    confirm_approve_body: "The workflow continues with your approval. This cannot be undone.",
    confirm_reject_body: "The workflow is told that the request was rejected. This cannot be undone.",
    confirm_approve: "Yes, approve",
    confirm_reject: "Yes, reject",
    cancel: "Cancel",
    sending: "Sending…",
    result_approved: "Approved. The workflow continues.",
    result_rejected: "Rejected. The workflow has been told.",
    result_recorded: (k, n) => `Your approval is recorded: ${k} of ${n} approvals. The request stays open until enough approvers agree.`,
    err_fix_fields: "Please correct the marked fields.",
    err_unavailable: "ringi could not be reached, or its storage or the workflow service is unavailable. Nothing was decided and your answers are kept: try again.",
    err_server: "Something went wrong on the server. Nothing was decided. Please try again later or contact your administrator.",
  },
  ja: {
    form_heading: "あなたの判断",
    required: "必須",
    choose: "選択してください…",
    comment_label: "コメント",
    comment_help: "任意。ワークフローに渡され、履歴に残ります。",
    approve: "承認する",
    reject: "却下する",
    decide_hint: "確認画面が表示されます。確定するまで何も決定されません。",
    confirm_approve_title: "この依頼を承認しますか？",
    confirm_reject_title: "この依頼を却下しますか？",
    confirm_approve_body: "あなたの承認でワークフローが再開されます。この操作は取り消せません。",
    confirm_reject_body: "却下されたことがワークフローに通知されます。この操作は取り消せません。",
    confirm_approve: "承認を確定",
    confirm_reject: "却下を確定",
    cancel: "キャンセル",
    sending: "送信中…",
    result_approved: "承認しました。ワークフローが再開されます。",
    result_rejected: "却下しました。ワークフローに通知されました。",
    result_recorded: (k, n) => `あなたの承認を記録しました（承認 ${k} / ${n}）。必要な人数が承認するまで、この依頼は未決定のままです。`,
    err_fix_fields: "印の付いた項目を修正してください。",
    err_unavailable: "ringi に接続できないか、そのストレージまたはワークフローのサービスが利用できません。何も決定されていません。入力内容はそのままです。もう一度お試しください。",
    err_server: "サーバーで問題が発生しました。何も決定されていません。しばらくしてから再度お試しいただくか、管理者に連絡してください。",
  },
};
// ringi-core's limits (decision::COMMENT_MAX_CHARS, form::TEXT_MAX_CHARS) and the app's radio/select switch
// (pages/approval/feedback.rs RADIO_MAX); the same test holds them equal.
const COMMENT_MAX_CHARS = 4000;
const TEXT_MAX_CHARS = 10000;
const RADIO_MAX = 5;

// The app's rule for showing the form (pages/approval/state.rs `can_decide`): pending and not past its expiry,
// not decided by this caller, no reason they may not, and a seat of their own.
function mayDecide(view) {
  const expires = Date.parse(view.expiresAt);
  return view.status === "pending" && !(expires <= Date.now()) && view.myDecision == null
    && view.cannotDecide == null && view.mySeat?.holds !== false && Array.isArray(view.form);
}

const node = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.className = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  el.append(...children.filter((c) => c !== undefined && c !== null));
  return el;
};

class BootForm {
  constructor(view, t) {
    this.view = view;
    this.t = t;
    this.sending = null;
    this.decided = false;
    this.fields = view.form.filter((f) => f && typeof f.name === "string" && typeof f.label === "string");
    this.form = node("form", { class: "form", novalidate: true });
    for (const field of this.fields) this.form.append(this.fieldView(field));
    this.comment = node("textarea", {
      id: "boot-comment", class: "input input--area", rows: 3, maxlength: COMMENT_MAX_CHARS,
      "aria-describedby": "boot-comment-help boot-comment-error", "data-testid": "boot-comment",
    });
    this.form.append(node("div", { class: "field" },
      node("label", { class: "field__label", for: "boot-comment" }, t.comment_label),
      this.comment,
      node("p", { id: "boot-comment-help", class: "field__help" }, t.comment_help),
      node("p", { id: "boot-comment-error", class: "field__error" })));
    this.alert = node("div", { class: "outcome", "data-testid": "boot-outcome" });
    const button = (verdict) => {
      const b = node("button", {
        type: "button", class: `button button--${verdict}`, "data-testid": `boot-${verdict}`,
      }, node("span", { "aria-hidden": "true" }, verdict === "approve" ? "✓ " : "✕ "), t[verdict]);
      b.addEventListener("click", () => this.ask(verdict));
      return b;
    };
    this.buttons = [button("approve"), button("reject")];
    this.form.append(node("div", { class: "decide__buttons" }, ...this.buttons),
      node("p", { class: "decide__hint" }, t.decide_hint));
    this.form.addEventListener("submit", (ev) => ev.preventDefault());
    this.form.addEventListener("input", (ev) => this.unmark(ev.target));
    this.form.addEventListener("change", (ev) => this.unmark(ev.target));
    [this.dialog, this.openDialog] = this.confirmView();
    this.section = node("section", {
      class: "card decide boot-form", "aria-labelledby": "boot-decide-title", "data-testid": "boot-form",
    }, node("h2", { id: "boot-decide-title", class: "card__title" }, t.form_heading), this.alert, this.form,
    this.dialog);
  }

  fieldView(f) {
    const id = `boot-field-${f.name}`;
    const t = this.t;
    const describedby = `${id}-help ${id}-error`;
    const label = (tag, attrs) => node(tag, { class: "field__label", id: `${id}-label`, ...attrs }, f.label,
      f.required ? node("span", { class: "field__required" }, t.required) : null);
    const common = { id, "aria-describedby": describedby, required: f.required };
    let control;
    let head;
    const options = Array.isArray(f.options) ? f.options.filter((o) => typeof o === "string") : [];
    switch (f.type) {
      case "number":
        control = node("input", { ...common, type: "number", class: "input input--number", inputmode: "decimal",
          step: "any", min: f.min ?? undefined, max: f.max ?? undefined });
        break;
      case "textarea":
        control = node("textarea", { ...common, class: "input input--area", rows: 4,
          maxlength: Math.min(f.maxLength ?? TEXT_MAX_CHARS, TEXT_MAX_CHARS) });
        break;
      case "boolean":
        control = node("input", { id, type: "checkbox", class: "checkbox", "aria-describedby": describedby });
        break;
      case "choice":
        if (options.length <= RADIO_MAX) {
          control = node("div", { class: "radios", role: "radiogroup", "aria-labelledby": `${id}-label`,
            "aria-required": f.required ? "true" : undefined, "aria-describedby": describedby },
          ...options.map((opt, i) => node("label", { class: "radio", for: `${id}-${i}` },
            node("input", { id: `${id}-${i}`, type: "radio", name: id, value: opt, required: f.required }),
            node("span", {}, opt))));
          head = label("p", {});
        } else {
          control = node("select", { ...common, class: "input input--select" },
            node("option", { value: "" }, t.choose), ...options.map((opt) => node("option", { value: opt }, opt)));
        }
        break;
      default:
        control = node("input", { ...common, type: "text", class: "input", autocomplete: "off",
          maxlength: Math.min(f.maxLength ?? TEXT_MAX_CHARS, TEXT_MAX_CHARS) });
    }
    head ??= label("label", { for: id });
    const isCheck = f.type === "boolean";
    return node("div", { class: isCheck ? "field field--check" : "field", "data-testid": `boot-field-${f.name}` },
      ...(isCheck ? [control, head] : [head, control]),
      node("p", { id: `${id}-help`, class: "field__help" }, typeof f.help === "string" ? f.help : ""),
      node("p", { id: `${id}-error`, class: "field__error" }));
  }

  confirmView() {
    const t = this.t;
    const title = node("h2", { id: "boot-confirm-title", class: "confirm__title" });
    const body = node("p", { id: "boot-confirm-body" });
    const cancel = node("button", { type: "button", class: "button button--secondary", autofocus: true,
      "data-testid": "boot-confirm-cancel" }, t.cancel);
    const confirm = node("button", { type: "button", "data-testid": "boot-confirm-decision" });
    const dialog = node("dialog", { class: "confirm", "aria-labelledby": "boot-confirm-title",
      "aria-describedby": "boot-confirm-body", "data-testid": "boot-confirm-dialog" },
    title, node("p", { class: "confirm__what" }, this.view.title), body,
    node("div", { class: "confirm__buttons" }, cancel, confirm));
    cancel.addEventListener("click", () => dialog.close());
    confirm.addEventListener("click", () => {
      dialog.close();
      this.send(dialog.dataset.verdict);
    });
    const open = (verdict) => {
      const reject = verdict === "reject";
      dialog.dataset.verdict = verdict;
      title.textContent = reject ? t.confirm_reject_title : t.confirm_approve_title;
      body.textContent = reject ? t.confirm_reject_body : t.confirm_approve_body;
      confirm.className = reject ? "button button--reject" : "button button--approve";
      confirm.textContent = reject ? t.confirm_reject : t.confirm_approve;
      dialog.showModal();
    };
    return [dialog, open];
  }

  // Approve / Reject: the browser's checks first (required, lengths, bounds, a number), then the confirmation.
  ask(verdict) {
    if (this.sending || this.decided) return;
    this.say(null);
    if (!this.form.reportValidity()) return;
    this.openDialog(verdict);
  }

  // A field's value as typed: the ticked box, the chosen radio's option, or the control's text.
  value(f) {
    const id = `boot-field-${f.name}`;
    if (f.type === "boolean") return document.getElementById(id)?.checked === true;
    const control = this.form.querySelector(`input[name="${id}"]:checked`) || document.getElementById(id);
    return control?.value ?? "";
  }

  // The feedback object as the app builds it (pages/approval/feedback.rs `collect`): empty fields left out,
  // numbers as numbers, booleans always.
  feedback() {
    const out = {};
    for (const f of this.fields) {
      const value = this.value(f);
      if (typeof value === "boolean") out[f.name] = value;
      else if (value.trim()) out[f.name] = f.type === "number" ? Number(value) : value;
    }
    return out;
  }

  async send(verdict) {
    if (this.sending || this.decided || (verdict !== "approve" && verdict !== "reject")) return;
    const session = storedSession();
    const comment = this.comment.value;
    const feedback = this.feedback();
    const body = { decision: verdict };
    if (comment.trim()) body.comment = comment;
    if (Object.keys(feedback).length) body.feedback = feedback;
    this.busy(true);
    // The app must not start from the approval as it was before this attempt.
    delete globalThis.ringiPrefetch;
    this.sending = (async () => {
      try {
        const response = await fetch(`/api/v1/approvals/${encodeURIComponent(this.view.id)}/decision`, {
          method: "POST",
          headers: { Authorization: `Bearer ${session?.bearer}`, "Content-Type": "application/json",
            Accept: "application/json" },
          body: JSON.stringify(body),
          cache: "no-store",
          credentials: "same-origin",
        });
        const answer = await response.json().catch(() => null);
        if (response.ok) return this.done(verdict, answer);
        const error = answer?.error;
        if (response.status === 400 && typeof error?.field === "string" && this.place(error.field, error.message)) {
          this.say(this.t.err_fix_fields);
        } else {
          this.say(typeof error?.message === "string" ? error.message : this.t.err_server, error?.code);
        }
      } catch {
        this.say(this.t.err_unavailable, "unavailable");
      } finally {
        this.busy(false);
        this.sending = null;
      }
    })();
    await this.sending;
  }

  done(verdict, answer) {
    this.decided = true;
    const t = this.t;
    const status = answer?.status;
    const text = verdict === "reject" ? t.result_rejected
      : status === "approved" ? t.result_approved
        : t.result_recorded(answer?.progress?.approvals ?? 1, answer?.progress?.required ?? 1);
    this.form.remove();
    this.alert.replaceChildren(node("p", {
      class: `notice notice--big notice--${verdict === "reject" ? "rejected" : "approved"}`, role: "status",
      "data-testid": "boot-result", "data-result": typeof status === "string" ? status : "",
    }, text));
  }

  // A 400 naming `comment` or `feedback.X`: the worker's message next to that field.
  place(field, message) {
    const name = field === "comment" ? "comment" : field.startsWith("feedback.") ? field.slice(9) : null;
    const id = name === "comment" ? "boot-comment" : name && `boot-field-${name}`;
    const error = id && document.getElementById(`${id}-error`);
    if (!error) return false;
    error.textContent = message;
    error.closest(".field")?.classList.add("field--invalid");
    const control = document.getElementById(`${id}-0`) || document.getElementById(id);
    control?.setAttribute("aria-invalid", "true");
    control?.focus();
    return true;
  }

  unmark(target) {
    const field = target?.closest?.(".field");
    if (!field?.classList.contains("field--invalid")) return;
    field.classList.remove("field--invalid");
    for (const el of field.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    const error = field.querySelector(".field__error");
    if (error) error.textContent = "";
  }

  say(text, code) {
    this.alert.replaceChildren(...(text ? [node("p", { class: "notice notice--error", role: "alert",
      "data-testid": "boot-error", "data-code": code || "fields" }, text)] : []));
  }

  busy(on) {
    for (const b of this.buttons) b.disabled = on;
    if (on) {
      this.alert.replaceChildren(node("p", { class: "notice notice--info notice--sending", role: "status",
        "data-testid": "boot-sending" }, this.t.sending));
    } else if (this.alert.querySelector("[data-testid=boot-sending]")) {
      this.alert.replaceChildren();
    }
  }

  // What was typed, in the app's draft format (pages/approval/feedback.rs `Draft`), `handedOver` so that the app
  // does not announce it as restored after a sign-in, and the field that had the focus.
  draft() {
    const text = {};
    for (const f of this.fields) text[f.name] = this.value(f);
    const active = document.activeElement?.id;
    const focus = active?.startsWith("boot-") && this.form.contains(document.activeElement) ? active.slice(5) : undefined;
    return { comment: this.comment.value, text, handedOver: true, focus };
  }

  // The app is about to start: a decision on its way is waited for (a while: one that hangs is the app's to
  // show, from the approval as the worker then has it), then the form stops taking input and what was typed is
  // left for the app.
  async handOver() {
    const patience = new Promise((resolve) => setTimeout(resolve, 10_000));
    if (this.sending) await Promise.race([this.sending, patience]);
    this.section.inert = true;
    if (this.decided) return;
    const draft = this.draft();
    const typed = draft.comment || Object.values(draft.text).some((v) => v === true || (typeof v === "string" && v));
    if (typed) sessionStorage.setItem(`ringi.draft.${this.view.id}`, JSON.stringify(draft));
  }
}

try {
  prefetchApproval();
} catch {
  // Not worth a failure: the app asks for the approval itself.
}

// Sign-in with authorization code + PKCE (S256). The one writer of the pending sign-in record
// (sessionStorage["ringi.auth.pending"]: state, PKCE verifier, page to come back to) that
// app/src/infra/auth.rs `complete` consumes on /auth/callback, where the oauth2 crate exchanges the code. The
// app calls it too (globalThis.ringiSignIn), so a short link opened signed-out need not wait for the wasm.
const b64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const randomB64url = (n) => b64url(crypto.getRandomValues(new Uint8Array(n)));

async function startSignIn(config, returnTo, lang, reauth) {
  // As many random bytes as the oauth2 crate's own CsrfToken::new_random / PkceCodeChallenge::new_random_sha256.
  const state = randomB64url(16);
  const verifier = randomB64url(32);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  // The worker's configuration names the endpoint (Cognito: below the Hosted UI domain; OIDC: from the
  // issuer's discovery document), so no discovery request is made here.
  const url = new URL(config.authorizationEndpoint);
  const params = {
    response_type: "code",
    client_id: config.clientId,
    state,
    code_challenge: b64url(new Uint8Array(digest)),
    code_challenge_method: "S256",
    redirect_uri: config.redirectUri,
    scope: config.scope || "openid email profile",
  };
  // Cognito's managed login picks its language from `lang`; OpenID Connect providers from `ui_locales`.
  if (config.provider === "oidc") params.ui_locales = lang;
  else params.lang = lang;
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  sessionStorage.setItem("ringi.auth.pending", JSON.stringify({ state, verifier, returnTo, createdAt: Date.now(), reauth }));
  sessionStorage.removeItem("ringi.signedOut");
  location.assign(url.href);
}
globalThis.ringiSignIn = startSignIn;

// The UI language the app would choose (app/src/infra/config.rs): the one picked in the header earlier, else the
// browser's first that the UI speaks, else the configured default.
function uiLanguage(config) {
  const speaks = (tag) => ["en", "ja"].find((l) => (tag || "").split(/[-_]/)[0].toLowerCase() === l);
  const chosen = [localStorage.getItem("ringi.locale"), ...(navigator.languages || [])].map(speaks).find(Boolean);
  return chosen || speaks(config.defaultLocale) || "en";
}

// A short link opened with no session in this tab has nothing to show before sign-in: go to the Hosted UI now
// rather than after the wasm has downloaded and started. A tab with an expired session is left to the app (it
// knows when signing in again would loop). Resolves false when the app should start instead.
async function signInFirst() {
  if (!shortLinkId() || storedSession() !== null) return false;
  const config = JSON.parse(document.getElementById("ringi-config")?.textContent || "null");
  if (!config?.authorizationEndpoint || !config.clientId || !config.redirectUri) return false;
  await startSignIn(config, location.pathname + location.search, uiLanguage(config), false);
  return true;
}

// Starts the wasm app.
async function startApp() {
  const js = meta("ringi-js");
  const wasm = meta("ringi-wasm");
  if (!js || !wasm) {
    throw new Error("missing <meta name=ringi-js/ringi-wasm> (index.html not built by Trunk?)");
  }
  // Fetch the wasm with the integrity hash of the <link rel="preload"> Trunk injected: the download is checked
  // (SRI) and the preloaded response is reused (a preload with integrity only matches a request with the same).
  const preload = [...document.querySelectorAll('link[rel="preload"][as="fetch"]')].find(
    (link) => link.getAttribute("href") === wasm,
  );
  const integrity = preload?.getAttribute("integrity") || undefined;
  const response = fetch(wasm, { integrity, credentials: "same-origin" });
  const [{ default: init }, module] = await Promise.all([import(js), WebAssembly.compileStreaming(response)]);
  // Compiled, so the app mounts right after: the form typed into before the wasm hands over now.
  await bootForm?.handOver();
  await init({ module_or_path: module });
}

// Repeat visits: public/sw.js serves the app shell and its hashed files from a cache and refreshes them in the
// background. Registered once the app runs (a sign-in redirect leaves before), never for the API.
function registerServiceWorker() {
  if (!("serviceWorker" in navigator) || !isSecureContext) return;
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch((error) => {
    console.warn("ringi: offline start unavailable", error);
  });
}

// index.html loads this module `async` (it does not wait for the stylesheet): the prefetch above needs no document;
// what follows reads the embedded configuration and mounts the app, so it waits until the document is parsed.
if (document.readyState === "loading") {
  await new Promise((resolve) => document.addEventListener("DOMContentLoaded", resolve, { once: true }));
}

try {
  if (!(await signInFirst().catch(() => false))) {
    await startApp();
    registerServiceWorker();
  }
} catch (error) {
  showFailure(error);
}
