//! Serve the connector tests' fake vendor alone, for recording the original CLI against
//! it: `cargo run -p gateway-test-support --bin fake-vendor -- [SECONDS]` prints the
//! port, then serves for SECONDS (default 600).

fn main() {
    let seconds: u64 = std::env::args().nth(1).map_or(600, |s| s.parse().expect("SECONDS: a whole number"));
    let (port, _log) = gateway_test_support::fake_vendor::start();
    println!("{port}");
    std::thread::sleep(std::time::Duration::from_secs(seconds));
}
