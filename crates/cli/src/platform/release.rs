//! `gateway release gate`: the platform's verdict on a build as an exit status CI can
//! branch on (0 pass, 1 blocked, 2 untested or no such build), optionally waiting for
//! the build's runs to settle; a step summary for GitHub Actions when it asks for one.

use super::calls::{client, TIMEOUT};
use super::flags::ReleaseCommand;
use crate::exit::Status;
use crate::printer::{err_line as err, out_line as out};
use gateway_hub_client::platform_client::{self as platform, python_g, GateError};
use gateway_world::json::Value;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// `gateway release …`.
pub fn release(command: ReleaseCommand) -> ExitCode {
    let ReleaseCommand::Gate { build, agent, version, commit, wait, timeout, interval, as_json, connection } = command;
    let query = match platform::gate_query(build.as_deref(), agent.as_deref(), version.as_deref(), commit.as_deref()) {
        Ok(query) => query,
        Err(message) => {
            err(format!("Error: {message}"));
            return Status::USAGE.into();
        }
    };
    let client = match client(&connection, TIMEOUT) {
        Ok(client) => client,
        Err(status) => return status.into(),
    };
    let progress = |result: &Value| {
        if as_json {
            return;
        }
        let (runs, pending) = platform::pending_runs(result);
        if runs == 0 {
            err("waiting: no run has recorded this build yet");
        } else if pending > 0 {
            err(format!("waiting: {pending} of {runs} run(s) still going"));
        }
    };
    let fetched = if wait {
        platform::wait_for_gate(&client, &query, Duration::from_secs_f64(timeout), Duration::from_secs_f64(interval), progress).map(
            |(result, settled)| {
                if !settled {
                    err(format!("timed out after {}s; reporting the latest verdict", python_g(timeout)));
                }
                result
            },
        )
    } else {
        platform::fetch_gate(&client, &query)
    };
    let result = match fetched {
        Ok(result) => result,
        Err(GateError::NotFound(message)) => {
            err(format!("Error: {message}"));
            return Status::UNTESTED.into();
        }
        Err(GateError::Status(reply)) => {
            // As the original: a gate the platform would not answer is not a pass.
            err(format!("Failed (HTTP {}): {}", reply.status, reply.text));
            return Status::UNTESTED.into();
        }
        Err(GateError::Transport(message)) => {
            err(message);
            return Status::FAILED.into();
        }
    };
    out(if as_json { platform::render_json(&result) } else { platform::render_table(&result) });
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        // A nicety, never the contract: a summary that cannot be written is ignored.
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = file.write_all(platform::step_summary(&result).as_bytes());
        }
    }
    match platform::exit_code_for(&result) {
        Ok(code) => Status::from_code(code).into(),
        Err(message) => {
            err(format!("Error: {message}"));
            Status::FAILED.into()
        }
    }
}
