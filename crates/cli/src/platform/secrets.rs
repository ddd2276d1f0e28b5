//! `gateway secret set|list|delete`: the project's secrets (values never listed).

use super::calls::{client, fail, failed, field, finish, json_truthy, list_of, send, Outcome, TIMEOUT};
use super::flags::{Connection, SecretCommand};
use crate::printer::out_line as out;
use gateway_hub_client::platform_client as platform;
use gateway_world::json::{object, python_str, Value};
use std::process::ExitCode;

/// `gateway secret …`.
pub fn secret(command: SecretCommand) -> ExitCode {
    finish(match command {
        SecretCommand::Set { name, value, description, scope, connection } => secret_set(&name, value, description, &scope, &connection),
        SecretCommand::List { connection } => secret_list(&connection),
        SecretCommand::Delete { name, connection } => {
            let client = match client(&connection, TIMEOUT) {
                Ok(client) => client,
                Err(status) => return status.into(),
            };
            send(client.delete(&format!("/api/public/secrets/{}", platform::segment(&name)))).and_then(|reply| {
                if reply.status == 200 || reply.status == 204 {
                    out(format!("Secret '{name}' deleted."));
                    Ok(())
                } else {
                    Err(failed(&reply))
                }
            })
        }
    })
}

fn secret_set(name: &str, value: Option<String>, description: Option<String>, scope: &str, connection: &Connection) -> Outcome {
    let value = match value {
        Some(value) => value,
        None => crate::hub::prompt_secret_like_click("Secret value").map_err(|e| fail(format!("Error: {e}")))?,
    };
    if value.is_empty() {
        return Err(fail("Error: an empty secret value is refused."));
    }
    let client = client(connection, TIMEOUT)?;
    let mut payload = object([("name", Value::str(name)), ("value", Value::str(&value)), ("scope", Value::str(scope))]);
    if let (Value::Object(map), Some(description)) = (&mut payload, description.filter(|d| !d.is_empty())) {
        map.insert("description".into(), Value::Str(description));
    }
    let reply = send(client.post("/api/public/secrets", &payload))?;
    match reply.status {
        200 | 201 => {
            out(format!("Secret '{}' saved ({})", reply.member("name", name), reply.member("displayValue", "****")));
            Ok(())
        }
        409 => {
            let reply = send(client.put(&format!("/api/public/secrets/{}", platform::segment(name)), &payload))?;
            if reply.status == 200 || reply.status == 201 {
                out(format!("Secret '{name}' updated."));
                Ok(())
            } else {
                Err(failed(&reply))
            }
        }
        _ => Err(failed(&reply)),
    }
}

fn secret_list(connection: &Connection) -> Outcome {
    let client = client(connection, TIMEOUT)?;
    let reply = send(client.get("/api/public/secrets", &[]))?;
    if reply.status != 200 {
        return Err(failed(&reply));
    }
    let secrets = list_of(&reply, "secrets");
    if secrets.is_empty() {
        out("No secrets configured. Run `gateway secret set <name>` to add one.");
        return Ok(());
    }
    out(format!("{} {} Description", platform::ljust("Name", 30), platform::ljust("Scope", 10)));
    out("-".repeat(70));
    for secret in &secrets {
        let description = secret.get("description").filter(|d| json_truthy(d)).map(python_str).unwrap_or_default();
        out(format!(
            "{} {} {}",
            platform::ljust(&field(secret, "name"), 30),
            platform::ljust(&field(secret, "scope"), 10),
            platform::prefix(&description, 28)
        ));
    }
    Ok(())
}
