//! The approver SPA's entry point: Trunk builds this binary into the page's wasm (the app is the library).

fn main() {
    ringi_app::start();
}
