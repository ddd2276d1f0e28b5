//! What the hub's session tests share: the helpdesk example pushed to a hub, and a
//! JSON-RPC request to a session's MCP endpoint as an MCP client sends it.

#![allow(dead_code)] // each test file uses its own part

use gateway_hub_client::client::{Client, PushOptions};
use gateway_test_support::{copy_tree, example, Key};
use gateway_world::json::Value;
use std::path::Path;

/// The helpdesk example copied to `work/helpdesk` and pushed as `helpdesk` with `key`
/// to the hub at `api`: the push's answer.
pub fn push_helpdesk(api: &str, key: &Key, work: &Path) -> Value {
    let world = work.join("helpdesk");
    copy_tree(&example("helpdesk"), &world);
    let client = Client::new(api, &key.0, &key.1).unwrap();
    client.push(&world, &PushOptions { slug: Some("helpdesk".into()), ..Default::default() }).unwrap()
}

/// A JSON-RPC `body` POSTed to a session's MCP endpoint (`url`) with its `token`, as a
/// streamable-HTTP MCP client sends it.
pub fn mcp_post(http: &reqwest::blocking::Client, url: &str, token: &str, body: &str) -> reqwest::blocking::RequestBuilder {
    http.post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string())
}
