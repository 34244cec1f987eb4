//! Prints the inbox query the worker sends to D1 (`ringi_core::sql::inbox::query`), for `make bench`'s query
//! plans: `cargo run -q -p ringi-core --example inbox_sql -- <principal count> <pending|decided>`.

fn main() {
    let mut args = std::env::args().skip(1);
    let principals: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let pending = args.next().as_deref() != Some("decided");
    println!("{}", ringi_core::sql::inbox::query(principals, pending));
}
