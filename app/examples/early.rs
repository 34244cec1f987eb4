//! Prints the constants scripts/build/spa.sh writes in front of app/boot.js (`boot`) or app/boot-form.js (`boot-form`).

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("boot") => print!("{}", ringi_app::early::boot_js()),
        Some("boot-form") => print!("{}", ringi_app::early::boot_form_js()),
        _ => {
            eprintln!("usage: early boot|boot-form");
            std::process::exit(2);
        }
    }
}
