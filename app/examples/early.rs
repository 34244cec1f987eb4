//! Prints the constants scripts/build/spa.sh writes in front of app/boot.js.

fn main() {
    print!("{}", ringi_app::early::boot_js());
}
