//! `gateway run start|verify|list` (the platform's optimization runs) and `gateway
//! dataset upload` (the items they run on, checked against an agent's task schema
//! before anything is uploaded).

use super::calls::{client, fail, failed, field, finish, json_truthy, list_of, send, Outcome, TIMEOUT};
use super::flags::{Connection, DatasetCommand, RunCommand};
use crate::exit::Status;
use crate::printer::{err_line as err, out_line as out};
use gateway_hub_client::platform_client::{self as platform, DatasetFileError};
use gateway_world::json::{self, object, python_str, Value};
use std::path::Path;
use std::process::ExitCode;

/// `gateway run …`.
pub fn run(command: RunCommand) -> ExitCode {
    finish(match command {
        RunCommand::Start { algorithm, agent, dataset, name, config, connection } => {
            run_start(&algorithm, &agent, &dataset, name, config, &connection)
        }
        RunCommand::Verify { algorithm, agent, dataset, connection } => (|| {
            let client = client(&connection, TIMEOUT)?;
            let mut payload = object([("algorithmName", Value::str(&algorithm)), ("agentId", Value::str(&agent))]);
            if let (Value::Object(map), Some(dataset)) = (&mut payload, dataset.filter(|d| !d.is_empty())) {
                map.insert("datasetId".into(), Value::Str(dataset));
            }
            let reply = send(client.post("/api/public/runs/verify", &payload))?;
            if reply.status == 200 || reply.status == 202 {
                out(format!("Verify job queued: {}", reply.member("jobId", "None")));
                Ok(())
            } else {
                Err(failed(&reply))
            }
        })(),
        RunCommand::List { source, limit, connection } => run_list(source, limit, &connection),
    })
}

fn run_start(
    algorithm: &str,
    agent: &str,
    dataset: &str,
    name: Option<String>,
    config: Option<String>,
    connection: &Connection,
) -> Outcome {
    let client = client(connection, TIMEOUT)?;
    let mut payload = json::Map::default();
    payload.insert("algorithmName".into(), Value::str(algorithm));
    payload.insert("agentId".into(), Value::str(agent));
    payload.insert("datasetId".into(), Value::str(dataset));
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        payload.insert("name".into(), Value::Str(name));
    }
    if let Some(config) = config.filter(|c| !c.is_empty()) {
        let parsed = json::parse_loads(&config).map_err(|e| fail(format!("Error: --config is not valid JSON ({e:?}): {config}")))?;
        payload.insert("config".into(), parsed.value);
    }
    let reply = send(client.post("/api/public/runs/start", &Value::Object(payload)))?;
    if reply.status == 200 || reply.status == 201 {
        out("Run started!");
        out(format!("  Run ID: {}", reply.member("runId", "None")));
        out(format!("  Run #:  {}", reply.member("runNumber", "None")));
        out(format!("  Job ID: {}", reply.member("jobId", "None")));
        out(format!("  Status: {}", reply.member("status", "None")));
        Ok(())
    } else {
        err(format!("Failed (HTTP {}):", reply.status));
        err(format!("  {}", reply.text));
        Err(Status::FAILED)
    }
}

fn run_list(source: Option<String>, limit: i64, connection: &Connection) -> Outcome {
    let client = client(connection, TIMEOUT)?;
    let mut query = vec![("limit", limit.to_string())];
    if let Some(source) = source.filter(|s| !s.is_empty()) {
        query.push(("source", source));
    }
    let reply = send(client.get("/api/public/runs", &query))?;
    if reply.status != 200 {
        return Err(failed(&reply));
    }
    let runs = list_of(&reply, "runs");
    if runs.is_empty() {
        out("No runs found.");
        return Ok(());
    }
    out(format!(
        "{} {} {} {}",
        platform::ljust("#", 6),
        platform::ljust("Name", 30),
        platform::ljust("State", 12),
        platform::ljust("Source", 10)
    ));
    out("-".repeat(60));
    for run in &runs {
        let name = run.get("name").filter(|n| json_truthy(n)).map(python_str).unwrap_or_default();
        out(format!(
            "{} {} {} {}",
            platform::ljust(&field(run, "runNumber"), 6),
            platform::ljust(&platform::prefix(&name, 28), 30),
            platform::ljust(&field(run, "state"), 12),
            platform::ljust(&field(run, "source"), 10)
        ));
    }
    Ok(())
}

/// `gateway dataset …`.
pub fn dataset(command: DatasetCommand) -> ExitCode {
    let DatasetCommand::Upload { path, name, agent, description, connection } = command;
    finish(dataset_upload(&path, &name, agent.as_deref(), description, &connection))
}

fn dataset_upload(path: &str, name: &str, agent: Option<&str>, description: Option<String>, connection: &Connection) -> Outcome {
    let file = Path::new(path);
    let items = platform::read_dataset_items(file).map_err(|e| match e {
        DatasetFileError::NotFound => fail(format!("Error: File not found: {path}")),
        DatasetFileError::Empty => fail("Error: No items found in file."),
        DatasetFileError::Unreadable(message) | DatasetFileError::Invalid(message) => fail(format!("Error: {message}")),
    })?;
    let file_name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    out(format!("Found {} items in {file_name}", items.len()));
    if let Some(agent) = agent.filter(|a| !a.is_empty()) {
        validate_against(agent, &items, connection)?;
    }
    out(format!("Uploading {} items as dataset '{name}'...", items.len()));
    let client = client(connection, TIMEOUT)?;
    let mut payload = json::Map::default();
    payload.insert("name".into(), Value::str(name));
    payload.insert("items".into(), Value::Array(items.into_iter().map(|item| object([("input", item)])).collect()));
    if let Some(description) = description.filter(|d| !d.is_empty()) {
        payload.insert("description".into(), Value::Str(description));
    }
    let reply = send(client.post("/api/public/datasets/import", &Value::Object(payload)))?;
    if reply.status != 200 && reply.status != 201 {
        return Err(failed(&reply));
    }
    out("Dataset created!");
    out(format!("  Dataset ID: {}", reply.member("datasetId", "None")));
    out(format!("  Name:       {}", reply.member("datasetName", "None")));
    out(format!("  Items:      {}", reply.member("itemCount", "None")));
    Ok(())
}

/// `--agent`: the items against the agent's `taskInputSchema` (nothing uploaded on a refusal).
fn validate_against(agent: &str, items: &[Value], connection: &Connection) -> Outcome {
    let client = client(connection, TIMEOUT)?;
    let reply = send(client.get("/api/public/agents", &[]))?;
    if reply.status != 200 {
        err(format!("Warning: Could not fetch agents for validation: HTTP {}", reply.status));
        return Ok(());
    }
    let agents = list_of(&reply, "agents");
    let Some(found) = agents.iter().find(|a| a.get("name").and_then(Value::as_str) == Some(agent)) else {
        err(format!("Warning: Agent '{agent}' not found, skipping validation"));
        return Ok(());
    };
    let Some(schema) = found.get("taskInputSchema").filter(|s| json_truthy(s)) else {
        out(format!("Agent '{agent}' has no taskInputSchema, skipping validation"));
        return Ok(());
    };
    out(format!("Validating against agent '{agent}' schema..."));
    let errors =
        platform::validate_items(schema, items).map_err(|e| fail(format!("Error: agent '{agent}' has an invalid taskInputSchema: {e}")))?;
    if !errors.is_empty() {
        err(format!("Validation failed ({} errors):", errors.len()));
        for line in errors.iter().take(10) {
            err(line);
        }
        if errors.len() > 10 {
            err(format!("  ... and {} more", errors.len() - 10));
        }
        return Err(Status::FAILED);
    }
    out(format!("  All {} items valid.", items.len()));
    Ok(())
}
