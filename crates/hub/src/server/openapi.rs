//! The hub's OpenAPI 3.1 document (`GET /openapi.json`): every JSON route of the API
//! (spec: hub_api.md) with its path and query parameters and whether it reads a JSON
//! body. Answers are described as the server's rule gives them — every answer a
//! non-empty JSON object, every refusal `{"error", "message"}` — not route by route.
//! The object routes (presigned URLs), the web pages and the sessions' data plane
//! are not in it: they are not called by name.

use gateway_world::json::{object, Map, Value};

/// One route: method, path template, query parameters (name, JSON type), whether it reads a JSON body.
type Route = (&'static str, &'static str, &'static [(&'static str, &'static str)], bool);

const CONTAINERS: &str = "/api/public/benchmark-containers";

/// The routes, as server/mod.rs and its route modules dispatch them.
const ROUTES: &[Route] = &[
    ("GET", "/healthz", &[], false),
    // Benchmark containers (mod.rs, versions.rs, refs.rs, objects.rs).
    ("POST", "{C}/resolve", &[], true),
    ("POST", "{C}/versions", &[], true),
    ("GET", "{C}/versions/diff", &[("base", "string"), ("head", "string")], false),
    ("POST", "{C}/versions/{versionId}/finalize", &[], true),
    ("GET", "{C}/versions/{versionId}/files", &[], false),
    ("GET", "{C}/versions/{versionId}/download", &[("artifact", "string")], false),
    ("POST", "{C}/resolve-version", &[], true),
    ("GET", "{C}/refs", &[("slug", "string")], false),
    ("POST", "{C}/refs", &[], true),
    ("GET", "{C}/log", &[("slug", "string"), ("branch", "string"), ("limit", "integer")], false),
    ("POST", "{C}/fork", &[], true),
    ("POST", "{C}/proposals", &[], true),
    ("GET", "{C}/proposals", &[("slug", "string")], false),
    ("PUT", "{C}/secrets", &[], true),
    ("GET", "{C}/secrets", &[("slug", "string")], false),
    ("DELETE", "{C}/secrets", &[], true),
    ("GET", "{C}/run-configs", &[], false),
    ("POST", "{C}/run-configs", &[], true),
    ("DELETE", "{C}/run-configs", &[], true),
    ("POST", "{C}/run-configs/dispatch", &[], true),
    // Evaluations (evaluations.rs).
    ("POST", "{C}/evaluations", &[], true),
    ("POST", "{C}/evaluations/{evaluationId}/samples", &[], true),
    ("POST", "{C}/evaluations/{evaluationId}/finalize", &[], true),
    // Beyond the original: samples' final states and a regrade (eval_states.rs, regrade.rs).
    ("POST", "{C}/evaluations/{evaluationId}/states", &[], true),
    ("POST", "{C}/evaluations/{evaluationId}/regrade", &[], true),
    ("POST", "/api/public/ingestion", &[], true),
    // Workspace connectors (connectors.rs).
    (
        "GET",
        "/api/public/context/connectors",
        &[("limit", "integer"), ("offset", "integer"), ("query", "string"), ("is_public", "string")],
        false,
    ),
    ("GET", "/api/public/context/connectors/{slug}", &[("exists", "string"), ("version", "string")], false),
    ("POST", "/api/public/context/connectors/{slug}", &[], true),
    ("DELETE", "/api/public/context/connectors/{slug}", &[], false),
    ("GET", "/api/public/connectors/hub", &[("query", "string")], false),
    ("POST", "/api/public/connectors/clone", &[], true),
    // World data (world_data.rs).
    ("GET", "/api/public/worlds/{slug}/data", &[("entity", "string")], false),
    ("POST", "/api/public/worlds/{slug}/data/batches", &[], true),
    ("GET", "/api/public/worlds/{slug}/data/batches", &[("limit", "integer"), ("cursor", "string")], false),
    ("GET", "/api/public/worlds/{slug}/data/batches/{batchId}", &[], false),
    ("POST", "/api/public/worlds/{slug}/data/batches/{batchId}/chunks", &[], true),
    ("POST", "/api/public/worlds/{slug}/data/batches/{batchId}/chunks/{chunkId}/uploaded", &[], false),
    ("POST", "/api/public/worlds/{slug}/data/batches/{batchId}/complete", &[], false),
    ("POST", "/api/public/worlds/{slug}/data/publish", &[], true),
    // World sessions and tasks (sessions.rs, tasks.rs).
    ("POST", "/api/public/world-sessions", &[], true),
    ("GET", "/api/public/world-sessions/{sessionId}", &[], false),
    ("DELETE", "/api/public/world-sessions/{sessionId}", &[], true),
    ("POST", "/api/public/world-sessions/{sessionId}/fork", &[], false),
    ("POST", "/api/public/world-sessions/{sessionId}/calls", &[], true),
    ("GET", "/api/public/world-sessions/{sessionId}/calls", &[("limit", "integer"), ("cursor", "string")], false),
    ("GET", "/api/public/world-sessions/{sessionId}/calls/{callId}", &[], false),
    ("POST", "/api/public/world-sessions/{sessionId}/task", &[], true),
    ("GET", "/api/public/world-sessions/{sessionId}/browser-events", &[], false),
    ("POST", "/api/public/world-sessions/{sessionId}/browser-events", &[], true),
    ("GET", "/api/public/world-sessions/{sessionId}/host", &[], false),
    ("POST", "/api/public/world-hosts", &[], true),
    ("POST", "/api/public/world-tasks", &[], true),
    ("GET", "/api/public/world-tasks", &[("world", "string"), ("page", "integer"), ("limit", "integer")], false),
    ("GET", "/api/public/world-tasks/{taskId}", &[("version", "integer")], false),
    ("PATCH", "/api/public/world-tasks/{taskId}", &[], true),
    ("DELETE", "/api/public/world-tasks/{taskId}", &[], false),
    ("POST", "/api/public/world-tasks/{taskId}/validate", &[], true),
    // Environments and task sets (environments.rs, task_sets.rs, captures.rs).
    ("GET", "/api/public/environments", &[("limit", "integer"), ("slug", "string")], false),
    ("GET", "/api/public/environments/runs/{runId}", &[("waitSeconds", "integer")], false),
    ("GET", "/api/public/environments/{containerId}", &[], false),
    ("GET", "/api/public/environments/{containerId}/task-set", &[], false),
    ("POST", "/api/public/environments/{containerId}/task-set", &[], true),
    ("GET", "/api/public/environments/{containerId}/performance", &[], false),
    ("GET", "/api/public/environments/{containerId}/rollouts", &[("limit", "integer")], false),
    ("GET", "/api/public/environments/{containerId}/rollouts/{evaluationId}/samples", &[("limit", "integer")], false),
    ("POST", "/api/public/environments/{containerId}/run", &[], true),
    ("POST", "/api/public/environments/{containerId}/connector-captures", &[], true),
    ("GET", "/api/public/environments/{containerId}/connector-captures/{requestId}", &[], false),
    ("GET", "/api/public/environments/{containerId}/files/download", &[("path", "string")], false),
    ("POST", "/api/public/task-sets", &[], true),
    ("POST", "/api/public/task-sets/{datasetId}/tasks", &[], true),
    ("POST", "/api/public/task-sets/{datasetId}/tasks/{taskId}", &[], true),
    ("GET", "/api/public/environment-agent", &[], false),
    ("POST", "/api/public/environment-agent/trigger", &[], true),
    // The agents platform (agents.rs, runs.rs, release.rs).
    ("POST", "/api/public/secrets", &[], true),
    ("GET", "/api/public/secrets", &[], false),
    ("PUT", "/api/public/secrets/{name}", &[], true),
    ("DELETE", "/api/public/secrets/{name}", &[], false),
    ("POST", "/api/public/agents/register", &[], true),
    ("GET", "/api/public/agents", &[], false),
    ("GET", "/api/public/agents/{agentId}", &[], false),
    ("GET", "/api/public/algorithms", &[], false),
    ("POST", "/api/public/datasets/import", &[], true),
    ("GET", "/api/public/datasets", &[], false),
    ("GET", "/api/public/datasets/{name}", &[], false),
    ("POST", "/api/public/runs/start", &[], true),
    ("POST", "/api/public/runs/verify", &[], true),
    ("POST", "/api/public/runs/claim", &[], true),
    ("GET", "/api/public/runs", &[("limit", "integer"), ("source", "string")], false),
    ("POST", "/api/public/runs", &[], true),
    ("GET", "/api/public/runs/{runId}", &[], false),
    ("POST", "/api/public/runs/{runId}/heartbeat", &[], true),
    ("POST", "/api/public/runs/{runId}/metrics", &[], true),
    ("POST", "/api/public/runs/{runId}/rollouts", &[], true),
    ("POST", "/api/public/runs/{runId}/finish", &[], true),
    ("POST", "/api/public/runs/{runId}/cancel", &[], false),
    ("POST", "/api/public/agent-builds", &[], true),
    (
        "GET",
        "/api/public/agent-builds/gate",
        &[("buildId", "string"), ("commitSha", "string"), ("agentId", "string"), ("version", "string")],
        false,
    ),
    ("GET", "/api/public/agent-builds/gate-rule", &[], false),
    ("PUT", "/api/public/agent-builds/gate-rule", &[], true),
    ("GET", "/api/public/agent-builds/{buildId}", &[], false),
];

fn parameter(name: &str, place: &str, kind: &str) -> Value {
    object([
        ("name", Value::str(name)),
        ("in", Value::str(place)),
        ("required", Value::Bool(place == "path")),
        ("schema", object([("type", Value::str(kind))])),
    ])
}

/// The document.
pub(super) fn document() -> Value {
    let json_object = || object([("application/json", object([("schema", object([("type", Value::str("object"))]))]))]);
    let refusal = object([
        ("type", Value::str("object")),
        (
            "properties",
            object([("error", object([("type", Value::str("string"))])), ("message", object([("type", Value::str("string"))]))]),
        ),
        ("required", Value::Array(vec![Value::str("error"), Value::str("message")])),
    ]);
    let mut paths = Map::default();
    for (method, template, query, body) in ROUTES {
        let path = template.replace("{C}", CONTAINERS);
        let mut parameters: Vec<Value> =
            gateway_connector::spec::placeholders(&path).iter().map(|name| parameter(name, "path", "string")).collect();
        parameters.extend(query.iter().map(|(name, kind)| parameter(name, "query", kind)));
        let mut operation = Map::default();
        operation.insert("parameters".into(), Value::Array(parameters));
        if *body {
            operation.insert("requestBody".into(), object([("content", json_object())]));
        }
        operation.insert(
            "responses".into(),
            object([
                ("2XX", object([("description", Value::str("The answer: a JSON object.")), ("content", json_object())])),
                (
                    "default",
                    object([
                        ("description", Value::str("A refusal: what went wrong and what to do.")),
                        ("content", object([("application/json", object([("schema", refusal.clone())]))])),
                    ]),
                ),
            ]),
        );
        if *template != "/healthz" {
            operation.insert("security".into(), Value::Array(vec![object([("apiKey", Value::Array(Vec::new()))])]));
        }
        let entry = paths.entry(path).or_insert_with(|| Value::Object(Map::default()));
        if let Value::Object(methods) = entry {
            methods.insert(method.to_lowercase(), Value::Object(operation));
        }
    }
    object([
        ("openapi", Value::str("3.1.0")),
        (
            "info",
            object([
                ("title", Value::str("Gateway hub")),
                ("version", Value::str(env!("CARGO_PKG_VERSION"))),
                (
                    "description",
                    Value::str(
                        "The hub's JSON API. Authenticate with a project's API key as HTTP Basic (public key : secret key). \
                         Every answer is a JSON object; every refusal is {\"error\": code, \"message\": text}.",
                    ),
                ),
            ]),
        ),
        ("paths", Value::Object(paths)),
        (
            "components",
            object([("securitySchemes", object([("apiKey", object([("type", Value::str("http")), ("scheme", Value::str("basic"))]))]))]),
        ),
    ])
}

#[cfg(test)]
mod tests {
    /// Every route the dispatchers answer is in the table, and the table names no
    /// route twice.
    #[test]
    fn the_table_names_each_route_once() {
        let mut seen = std::collections::BTreeSet::new();
        for (method, path, _, _) in super::ROUTES {
            assert!(seen.insert((method, path)), "{method} {path} twice");
        }
        let document = super::document();
        let paths = document.get("paths").and_then(|p| p.as_object()).unwrap();
        assert_eq!(paths.values().map(|m| m.as_object().unwrap().len()).sum::<usize>(), super::ROUTES.len());
    }
}
