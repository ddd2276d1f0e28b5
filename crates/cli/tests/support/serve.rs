//! An axum app served on a loopback port.

/// Serve `app` on a loopback port: the runtime (keep it alive) and the address.
pub fn serve(app: axum::Router) -> (tokio::runtime::Runtime, std::net::SocketAddr) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    });
    (runtime, addr)
}
