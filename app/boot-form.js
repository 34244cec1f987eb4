// The decision form before the wasm, drawn by app/boot.js under the prefetched approval: a phone on a slow network
// can approve or reject as soon as the approval is readable, seconds before the app has downloaded. It is the
// app's form in plain DOM (same fields, controls, ids prefixed `boot-`, texts, confirmation and POST); the
// browser's constraint checks stand in for the app's own (the worker checks every field again and names the one
// it refuses). When the wasm is compiled, boot.js calls `handOver`: what was typed goes on through the app's draft
// (app/src/pages/approval/form_state.rs), a decision on its way is waited for, and after an attempt the app loads
// the approval afresh.
//
// A module of its own, loaded `async` beside boot.js (hashed and SRI-checked by Trunk like it), so that boot.js —
// the sign-in redirect and the approval's prefetch — stays small on the critical path. It runs nothing itself
// beyond announcing what it defines (`globalThis.ringiBootForm`, then the `ringi:boot-form` event).

// TEXTS, COMMENT_MAX_CHARS, TEXT_MAX_CHARS, RADIO_MAX, FIELD_TYPES and DRAFT_KEY_PREFIX are the app's, written in
// front of this script at build time (app/src/early.rs, scripts/build/spa.sh).

// Whether to draw the form: the worker says whether this caller may decide (`canDecide`, the rule the app
// follows too), and only a form of field types this script draws; anything else is left to the app — also an
// approval that asks for a particular sign-in (`requireSignIn`): the app signs in again as it asks, keeping what
// was typed, before it sends the decision.
function mayDecide(view) {
  return view.canDecide === true && !view.requireSignIn && Array.isArray(view.form)
    && view.form.every((f) => FIELD_TYPES.includes(f.type));
}

// The id of a field's control (`boot-` + the app's `field-{name}`: the draft's focus maps one onto the other).
const fieldId = (name) => `boot-field-${name}`;
// A text field's length limit, as ringi-core `form::text_limit`.
const textLimit = (f) => Math.min(f.maxLength ?? TEXT_MAX_CHARS, TEXT_MAX_CHARS);

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
  // `lang`: "en" or "ja", as boot.js chose for the preview; `bearer`: the session's access token when sent.
  constructor(view, lang, bearer) {
    this.view = view;
    const t = TEXTS[lang] || TEXTS.en;
    this.t = t;
    this.bearer = bearer;
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
    const id = fieldId(f.name);
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
        control = node("textarea", { ...common, class: "input input--area", rows: 4, maxlength: textLimit(f) });
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
      default: // "text" (mayDecide lets no other type through)
        control = node("input", { ...common, type: "text", class: "input", autocomplete: "off",
          maxlength: textLimit(f) });
    }
    head ??= label("label", { for: id });
    const isCheck = f.type === "boolean";
    return node("div", { class: isCheck ? "field field--check" : "field", "data-testid": id },
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
    const id = fieldId(f.name);
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
          headers: { Authorization: `Bearer ${this.bearer()}`, "Content-Type": "application/json",
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
        : t.result_recorded.replace("{k}", answer?.progress?.approvals ?? 1).replace("{n}", answer?.progress?.required ?? 1);
    this.form.remove();
    this.alert.replaceChildren(node("p", {
      class: `notice notice--big notice--${verdict === "reject" ? "rejected" : "approved"}`, role: "status",
      "data-testid": "boot-result", "data-result": typeof status === "string" ? status : "",
    }, text));
  }

  // A 400 naming `comment` or `feedback.X`: the worker's message next to that field.
  place(field, message) {
    const name = field === "comment" ? "comment" : field.startsWith("feedback.") ? field.slice(9) : null;
    const id = name === "comment" ? "boot-comment" : name && fieldId(name);
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
    if (typed) sessionStorage.setItem(`${DRAFT_KEY_PREFIX}${this.view.id}`, JSON.stringify(draft));
  }
}

globalThis.ringiBootForm = { BootForm, mayDecide };
document.dispatchEvent(new Event("ringi:boot-form"));
