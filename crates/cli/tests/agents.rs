//! The agents-platform commands end to end: `gateway hub serve` on loopback and our
//! `gateway secret|agent|deploy|init|algorithm|dataset|run|release` against it — each
//! command's prints and exit codes, its refusals (nothing written), secrets never
//! printed and sealed at rest, a worker claiming and reporting a queued run over HTTP,
//! the release gate's verdicts and `--wait`. Then the ORIGINAL `gateway` (reference
//! install; skipped with a NOTICE without it) runs secret set/list/delete, agent list,
//! dataset upload, run start/list and release gate against the same hub, printing what
//! ours prints.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::*;
mod support;

use gateway_world::json::{self, Value};

/// What a run of a `gateway` printed.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run `program` against `server` in `cwd`, with `env` on top (a `PATH` there replaces
/// ours) and `stdin` piped in.
fn gw(server: &Server, program: &Path, args: &[&str], cwd: &Path, env: &[(&str, &str)], stdin: Option<&str>) -> Ran {
    let mut command = command(server, program, args, cwd);
    command.env("COLUMNS", "400").env_remove("GITHUB_STEP_SUMMARY").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ours(server: &Server, args: &[&str], cwd: &Path) -> Ran {
    gw(server, Path::new(GATEWAY), args, cwd, &[], None)
}

/// Ours, expecting exit 0: its stdout.
fn ok_ours(server: &Server, args: &[&str], cwd: &Path) -> String {
    let ran = ours(server, args, cwd);
    assert_eq!(ran.code, 0, "{args:?}:\n{}\n{}", ran.stdout, ran.stderr);
    ran.stdout
}

/// A call to the hub's API with the project key: `(status, body)`.
fn api(server: &Server, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let http = reqwest::blocking::Client::new();
    let mut request = http
        .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), format!("{}{path}", server.host))
        .basic_auth(&server.public, Some(&server.secret));
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    (status, json::parse(&text).map(|p| p.value).unwrap_or(Value::Str(text)))
}

fn api_ok(server: &Server, method: &str, path: &str, body: Option<&str>) -> Value {
    let (status, answer) = api(server, method, path, body);
    assert!((200..300).contains(&status), "{method} {path}: {status} {answer:?}");
    answer
}

use gateway_test_support::text;

/// The value after `label` on a line of `printed` (`  ID: agt_…` → `agt_…`).
fn after(printed: &str, label: &str) -> String {
    printed
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no {label} in {printed}"))
}

/// `init` then a `task.yml` and an `.env`: an agent project in `<root>/agent`.
fn agent_project(server: &Server, root: &Path) -> PathBuf {
    let dir = root.join("agent");
    std::fs::create_dir_all(&dir).unwrap();
    ok_ours(server, &["init", "--agent", "crm_agent:crm_agent"], &dir);
    std::fs::write(
        dir.join("gateway_manifest/task.yml"),
        "input_schema:\n  type: object\n  required: [question]\n  properties:\n    question: {type: string}\n",
    )
    .unwrap();
    let mut env = std::fs::OpenOptions::new().append(true).open(dir.join("gateway_manifest/.env")).unwrap();
    env.write_all(b"OPENAI_API_KEY=sk-from-dotenv-31337\nQUOTED=\"a b\"\n").unwrap();
    dir
}

/// A directory holding an executable `docker` that records its arguments and answers
/// `inspect` with a digest (`fail` makes `build` fail).
fn fake_docker(root: &Path, fail: bool) -> PathBuf {
    let bin = root.join(if fail { "bin-failing" } else { "bin" });
    std::fs::create_dir_all(&bin).unwrap();
    let log = root.join("docker.log");
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> '{}'\nif [ \"$1\" = inspect ]; then echo sha256:feedface; exit 0; fi\n{}\n",
        log.display(),
        if fail { "echo 'step 3: no such file requirements.txt' >&2; exit 1" } else { "exit 0" }
    );
    let path = bin.join("docker");
    std::fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

#[test]
fn secrets_are_set_listed_deleted_and_never_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let work = tmp.path();
    assert_eq!(ok_ours(&server, &["secret", "list"], work), "No secrets configured. Run `gateway secret set <name>` to add one.\n");
    let value = "tvly-secret-0123456789";
    let set = ours(&server, &["secret", "set", "TAVILY_API_KEY", "-v", value, "-d", "search tool key"], work);
    assert_eq!((set.code, set.stdout.as_str()), (0, "Secret 'TAVILY_API_KEY' saved (****)\n"));
    // Exists: 409, then PUT.
    let set = ours(&server, &["secret", "set", "TAVILY_API_KEY", "--value", "rotated-value-99", "--scope", "both"], work);
    assert_eq!((set.code, set.stdout.as_str()), (0, "Secret 'TAVILY_API_KEY' updated.\n"));
    // No --value: prompted (hidden on a terminal; one line of piped stdin here).
    let prompted = gw(&server, Path::new(GATEWAY), &["secret", "set", "PROMPTED_KEY"], work, &[], Some("typed-in-secret\n"));
    assert_eq!((prompted.code, prompted.stdout.as_str()), (0, "Secret value:Secret 'PROMPTED_KEY' saved (****)\n"));
    let empty = gw(&server, Path::new(GATEWAY), &["secret", "set", "EMPTY_KEY"], work, &[], Some("\n"));
    assert!(empty.code == 1 && empty.stderr.ends_with("Error: an empty secret value is refused.\n"), "{}", empty.stderr);
    let bad = ours(&server, &["secret", "set", "bad-name", "-v", "x"], work);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.starts_with("Failed (HTTP 400): ") && bad.stderr.contains("invalid secret key 'bad-name'"), "{}", bad.stderr);
    let listed = ok_ours(&server, &["secret", "list"], work);
    assert_eq!(
        listed,
        format!(
            "{:<30} {:<10} Description\n{}\n{:<30} {:<10} \n{:<30} {:<10} search tool key\n",
            "Name",
            "Scope",
            "-".repeat(70),
            "PROMPTED_KEY",
            "agent",
            "TAVILY_API_KEY",
            "both"
        )
    );
    for secret in [value, "rotated-value-99", "typed-in-secret"] {
        let (_, answer) = api(&server, "GET", "/api/public/secrets", None);
        assert!(!json::canonical(&answer).contains(secret));
        let database = std::fs::read(tmp.path().join("data/hub.sqlite")).unwrap();
        assert!(!database.windows(secret.len()).any(|w| w == secret.as_bytes()), "{secret} is sealed at rest");
    }
    assert_eq!(ok_ours(&server, &["secret", "delete", "PROMPTED_KEY"], work), "Secret 'PROMPTED_KEY' deleted.\n");
    let again = ours(&server, &["secret", "delete", "PROMPTED_KEY"], work);
    assert_eq!(again.code, 1);
    assert!(again.stderr.starts_with("Failed (HTTP 404): "), "{}", again.stderr);
    // No credentials anywhere: the original's message, exit 1.
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(GATEWAY)
        .args(["secret", "list"])
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: Host not configured. Use --host, set GATEWAY_HOST, or run `gateway auth login`.\n"
    );
}

#[test]
fn init_deploy_and_agent_list() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    assert_eq!(ok_ours(&server, &["agent", "list"], tmp.path()), "No agents registered. Run `gateway deploy` to register an agent.\n");
    let dir = agent_project(&server, tmp.path());
    for file in ["Dockerfile", "gateway_manifest/agent.yml", "gateway_manifest/.env", ".gitignore"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let validated = "Validating manifest...\n  Name: crm-agent\n  Version: 1.0.0\n  Capabilities: prompt-optimization, tool-use\n  Task schema: found\n";
    assert_eq!(ok_ours(&server, &["deploy", "--dry-run"], &dir), format!("{validated}Dry-run complete. Manifest is valid.\n"));
    let agents = |server: &Server| api_ok(server, "GET", "/api/public/agents", None).get("agents").and_then(Value::as_array).map(Vec::len);

    // No docker on PATH: a clear refusal, nothing registered.
    let empty_bin = tmp.path().join("empty-bin");
    std::fs::create_dir_all(&empty_bin).unwrap();
    let refused = gw(&server, Path::new(GATEWAY), &["deploy"], &dir, &[("PATH", empty_bin.to_str().unwrap())], None);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert_eq!(refused.stdout, format!("{validated}\nBuilding image 'crm-agent:latest' (strategy: dockerfile)...\n"));
    assert!(refused.stderr.starts_with("Build failed: the docker CLI is not installed"), "{}", refused.stderr);
    assert_eq!(agents(&server), Some(0));
    // A failing build: docker's stderr, nothing registered.
    let failing = fake_docker(tmp.path(), true);
    let refused = gw(&server, Path::new(GATEWAY), &["deploy"], &dir, &[("PATH", failing.to_str().unwrap())], None);
    assert_eq!(
        (refused.code, refused.stderr.as_str()),
        (1, "Build failed: docker build failed:\nstep 3: no such file requirements.txt\n\n")
    );
    assert_eq!(agents(&server), Some(0));

    // With the docker CLI: built from the Dockerfile, registered with the image's digest,
    // the .env entries uploaded as agent-scope secrets.
    let bin = fake_docker(tmp.path(), false);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let deployed = gw(&server, Path::new(GATEWAY), &["deploy"], &dir, &[("PATH", &path)], None);
    assert_eq!(deployed.code, 0, "{}\n{}", deployed.stdout, deployed.stderr);
    let id = after(&deployed.stdout, "ID:");
    assert_eq!(
        deployed.stdout,
        format!(
            "{validated}\nBuilding image 'crm-agent:latest' (strategy: dockerfile)...\n  Built successfully!\n\n\
             Registering agent 'crm-agent' with image 'crm-agent:latest'...\nAgent registered successfully!\n  ID: {id}\n  Name: crm-agent\n\
             \x20 Compatible algorithms: gepa, apo, evals\n\nUploading 2 secret(s)...\n  OPENAI_API_KEY (created)\n  QUOTED (created)\n"
        )
    );
    assert!(!deployed.stdout.contains("sk-from-dotenv") && !deployed.stderr.contains("sk-from-dotenv"));
    let log = std::fs::read_to_string(tmp.path().join("docker.log")).unwrap();
    assert!(log.contains("build -t crm-agent:latest .\n") && log.contains("inspect --format {{.Id}} crm-agent:latest\n"), "{log}");
    let agent = api_ok(&server, "GET", "/api/public/agents/crm-agent", None);
    assert_eq!(
        (text(&agent, "imageDigest"), text(&agent, "taskInputSchema.required")),
        ("sha256:feedface".into(), r#"["question"]"#.into())
    );
    assert_eq!(text(&agent, "manifest.runner.poll_interval"), "5.0");
    let secrets = api_ok(&server, "GET", "/api/public/secrets", None);
    assert_eq!((text(&secrets, "secrets.0.name"), text(&secrets, "secrets.0.scope")), ("OPENAI_API_KEY".into(), "agent".into()));

    // A pre-built image: registered, nothing built; the secrets are rotated.
    let skipped = ok_ours(&server, &["deploy", "registry.example.com/crm/agent:v2", "--skip-build"], &dir);
    assert!(skipped.contains("with image 'registry.example.com/crm/agent:v2'...\n") && !skipped.contains("Building"), "{skipped}");
    assert!(skipped.ends_with("  OPENAI_API_KEY (updated)\n  QUOTED (updated)\n"), "{skipped}");
    assert_eq!(after(&skipped, "ID:"), id, "a re-deploy updates the agent");
    let listed = ok_ours(&server, &["agent", "list"], &dir);
    assert_eq!(
        listed,
        format!(
            "{:<20} {:<30} Compatible\n{}\n{:<20} {:<30} gepa, apo, evals\n",
            "Name",
            "Image",
            "-".repeat(70),
            "crm-agent",
            "registry.example.com/crm/age"
        )
    );
    let no_image = ours(&server, &["deploy", "--skip-build"], &dir);
    assert_eq!((no_image.code, no_image.stderr.as_str()), (1, "Error: No image specified. Provide an image argument or use --tag.\n"));

    // Manifest refusals: nothing registered, nothing built.
    let missing = ours(&server, &["deploy", "--manifest-dir", "./nowhere/"], &dir);
    assert_eq!((missing.code, missing.stderr.as_str()), (1, "Error: Manifest directory not found: nowhere\n"));
    std::fs::write(dir.join("gateway_manifest/agent.yml"), "- not\n- a mapping\n").unwrap();
    let broken = ours(&server, &["deploy", "img:1", "--skip-build"], &dir);
    assert_eq!((broken.code, broken.stderr.as_str()), (1, "Error parsing manifest: agent.yml must be a YAML mapping, got list\n"));
    std::fs::write(dir.join("gateway_manifest/agent.yml"), "version: 2\n").unwrap();
    let nameless = ours(&server, &["deploy", "--dry-run"], &dir);
    assert_eq!((nameless.code, nameless.stderr.as_str()), (1, "Error parsing manifest: agent.yml must contain a 'name' field\n"));
    assert_eq!(agents(&server), Some(1));
    assert_eq!(text(&api_ok(&server, "GET", "/api/public/agents/crm-agent", None), "image"), "registry.example.com/crm/agent:v2");
}

#[test]
fn init_refuses_a_missing_directory_and_keeps_existing_files() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let out = ours(&server, &["init", "-a", "x:y", "-o", "nowhere"], tmp.path());
    assert_eq!((out.code, out.stderr.as_str()), (1, "Error: output directory nowhere does not exist: create it first\n"));
    std::fs::write(tmp.path().join(".gitignore"), "target/\n").unwrap();
    std::fs::write(tmp.path().join("Dockerfile"), "FROM scratch\n").unwrap();
    let printed = ok_ours(&server, &["init", "-a", "my_bot:agent", "-n", "bot", "-o", "./"], tmp.path());
    assert!(printed.starts_with(
        "Warning: Dockerfile already exists, skipping.\nCreated gateway_manifest/agent.yml\nUpdated .gitignore (added gateway_manifest/.env)\n"
    ));
    assert_eq!(std::fs::read_to_string(tmp.path().join("Dockerfile")).unwrap(), "FROM scratch\n");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join(".gitignore")).unwrap(),
        "target/\n\n# Gateway secrets (API keys)\ngateway_manifest/.env\n"
    );
    assert!(std::fs::read_to_string(tmp.path().join("gateway_manifest/agent.yml")).unwrap().contains("name: bot\n"));
}

#[test]
fn algorithm_list_and_new() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let listed = ok_ours(&server, &["algorithm", "list"], tmp.path());
    let blank = format!("{:<12} {:<16} {:<6} \n", "", "", "False");
    assert_eq!(
        listed,
        format!(
            "Name         Display          GPU    Description\n{}\n{blank}{blank}gepa         GEPA             False  Genetic-Pareto Prompt Adaptation\n",
            "-".repeat(70)
        )
    );
    assert_eq!(ok_ours(&server, &["algorithm", "new", "my_algo"], tmp.path()), "Created algorithm scaffold: my_algo.py\n");
    let module = std::fs::read_to_string(tmp.path().join("my_algo.py")).unwrap();
    assert!(module.starts_with("\"\"\"Custom algorithm: my_algo.\"\"\"\n"));
    assert!(module.contains("class MyAlgo(Algorithm):\n") && module.contains("    display_name: ClassVar[str] = \"My Algo\"\n"));
    assert!(module.ends_with("        raise NotImplementedError(\"Implement run() for my_algo\")\n"));
    let exists = ours(&server, &["algorithm", "new", "my_algo", "--output-dir", "."], tmp.path());
    assert_eq!((exists.code, exists.stderr.as_str()), (1, "Error: my_algo.py already exists.\n"));
    let bad = ours(&server, &["algorithm", "new", "my-algo"], tmp.path());
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.starts_with("Error: 'my-algo' cannot name an algorithm"), "{}", bad.stderr);
    assert!(!tmp.path().join("my-algo.py").exists());
}

#[test]
fn dataset_upload_in_every_shape_and_its_refusals() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let work = tmp.path();
    let write = |name: &str, body: &str| std::fs::write(work.join(name), body).unwrap();
    write("array.json", r#"[{"name": "t1", "question": "q1"}, {"name": "t2", "question": "q2"}]"#);
    write("tasks.json", r#"{"tasks": [{"question": "a"}]}"#);
    write("items.json", r#"{"items": [{"question": "a"}, {"question": "b"}, {"question": "c"}]}"#);
    write("rows.jsonl", "{\"question\": \"a\"}\n\n{\"question\": \"b\"}\n");
    write("bad.json", "[{\"question\": \"a\"},\n {\"question\": }]\n");
    write("empty.json", "{\"tasks\": []}");
    write("invalid.json", r#"[{"name": "fine", "question": "q"}, {"name": "t2"}, {"question": 5}]"#);
    let datasets =
        |server: &Server| api_ok(server, "GET", "/api/public/datasets", None).get("data").and_then(Value::as_array).map(Vec::len);
    for (file, count) in [("array.json", 2), ("tasks.json", 1), ("items.json", 3), ("rows.jsonl", 2)] {
        let name = format!("ds-{file}");
        let printed = ok_ours(&server, &["dataset", "upload", file, "--name", &name, "--description", "d"], work);
        let id = after(&printed, "Dataset ID:");
        assert_eq!(
            printed,
            format!(
                "Found {count} items in {file}\nUploading {count} items as dataset '{name}'...\nDataset created!\n  Dataset ID: {id}\n  Name:       {name}\n  Items:      {count}\n"
            )
        );
        let shown = api_ok(&server, "GET", &format!("/api/public/datasets/{name}"), None);
        assert_eq!(
            (text(&shown, "itemCount"), text(&shown, "items.0.input.question")),
            (count.to_string(), if file == "array.json" { "q1".into() } else { "a".to_string() })
        );
    }
    assert_eq!(datasets(&server), Some(4));
    let malformed = ours(&server, &["dataset", "upload", "bad.json", "--name", "bad"], work);
    assert_eq!(malformed.code, 1);
    assert!(malformed.stderr.starts_with("Error: bad.json is not valid JSON: "), "{}", malformed.stderr);
    let empty = ours(&server, &["dataset", "upload", "empty.json", "--name", "empty"], work);
    assert_eq!((empty.code, empty.stderr.as_str()), (1, "Error: No items found in file.\n"));
    let missing = ours(&server, &["dataset", "upload", "nope.json", "--name", "x"], work);
    assert_eq!((missing.code, missing.stderr.as_str()), (1, "Error: File not found: nope.json\n"));

    // --agent: the items against its taskInputSchema, with jsonschema's words.
    api_ok(
        &server,
        "POST",
        "/api/public/agents/register",
        Some(
            r#"{"name": "crm", "image": "crm:1", "taskInputSchema": {"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}}}}"#,
        ),
    );
    let refused = ours(&server, &["dataset", "upload", "invalid.json", "--name", "checked", "--agent", "crm"], work);
    assert_eq!(refused.code, 1);
    assert_eq!(refused.stdout, "Found 3 items in invalid.json\nValidating against agent 'crm' schema...\n");
    assert_eq!(
        refused.stderr,
        "Validation failed (2 errors):\n  [2/3] t2: 'question' is a required property\n  [3/3] item 2: 5 is not of type 'string'\n"
    );
    assert_eq!(datasets(&server), Some(4), "refused uploads wrote nothing");
    let checked = ok_ours(&server, &["dataset", "upload", "array.json", "--name", "checked", "--agent", "crm"], work);
    assert!(
        checked.starts_with("Found 2 items in array.json\nValidating against agent 'crm' schema...\n  All 2 items valid.\nUploading"),
        "{checked}"
    );
    let unknown = ours(&server, &["dataset", "upload", "tasks.json", "--name", "u", "--agent", "ghost"], work);
    assert_eq!((unknown.code, unknown.stderr.as_str()), (0, "Warning: Agent 'ghost' not found, skipping validation\n"));
}

#[test]
fn runs_are_queued_claimed_by_a_worker_and_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let work = tmp.path();
    api_ok(&server, "POST", "/api/public/agents/register", Some(r#"{"name": "crm", "image": "crm:1"}"#));
    std::fs::write(work.join("d.json"), r#"[{"q": 1}]"#).unwrap();
    ok_ours(&server, &["dataset", "upload", "d.json", "--name", "crm-v1"], work);
    assert_eq!(ok_ours(&server, &["run", "list"], work), "No runs found.\n");

    let unknown = ours(&server, &["run", "start", "sgd", "--agent", "crm", "--dataset", "crm-v1"], work);
    assert_eq!(unknown.code, 1);
    assert_eq!(
        unknown.stderr,
        "Failed (HTTP 400):\n  {\"error\": \"bad_request\", \"message\": \"unknown algorithm 'sgd': this hub runs gepa, apo, evals\"}\n"
    );
    let bad_config = ours(&server, &["run", "start", "gepa", "--agent", "crm", "--dataset", "crm-v1", "--config", "{epochs"], work);
    assert_eq!(bad_config.code, 1);
    assert!(bad_config.stderr.starts_with("Error: --config is not valid JSON"), "{}", bad_config.stderr);
    assert_eq!(ok_ours(&server, &["run", "list"], work), "No runs found.\n", "refused starts queue nothing");

    let started = ok_ours(
        &server,
        &["run", "start", "gepa", "--agent", "crm", "--dataset", "crm-v1", "--name", "nightly", "--config", r#"{"epochs": 3}"#],
        work,
    );
    let (run, job) = (after(&started, "Run ID:"), after(&started, "Job ID:"));
    assert_eq!(started, format!("Run started!\n  Run ID: {run}\n  Run #:  1\n  Job ID: {job}\n  Status: queued\n"));
    let verified = ok_ours(&server, &["run", "verify", "apo", "--agent", "crm"], work);
    assert!(verified.starts_with("Verify job queued: job_"), "{verified}");

    // A worker: claim, start, heartbeat, metrics, a rollout, finish.
    let claimed = api_ok(&server, "POST", "/api/public/runs/claim", Some(r#"{"workerId": "w1", "kinds": ["run"]}"#));
    assert_eq!(
        (text(&claimed, "job.runId"), text(&claimed, "job.jobId"), text(&claimed, "job.config.epochs")),
        (run.clone(), job.clone(), "3".into())
    );
    let at = |tail: &str| format!("/api/public/runs/{run}/{tail}");
    api_ok(&server, "POST", &at("state"), Some(r#"{"state": "running", "workerId": "w1"}"#));
    api_ok(&server, "POST", &at("heartbeat"), Some(r#"{"workerId": "w1"}"#));
    let table = |state: &str| {
        format!(
            "{:<6} {:<30} {:<12} {:<10}\n{}\n{:<6} {:<30} {:<12} {:<10}\n",
            "#",
            "Name",
            "State",
            "Source",
            "-".repeat(60),
            1,
            "nightly",
            state,
            "platform"
        )
    };
    assert_eq!(ok_ours(&server, &["run", "list"], work), table("running"));
    api_ok(&server, "POST", &at("metrics"), Some(r#"{"metrics": [{"name": "reward", "value": 0.8, "step": 1}]}"#));
    api_ok(&server, "POST", &at("rollouts"), Some(r#"{"name": "t1"}"#));
    let (status, stale) = api(&server, "POST", &at("finish"), Some(r#"{"state": "completed", "workerId": "someone-else"}"#));
    assert_eq!(status, 409, "{stale:?}");
    api_ok(&server, "POST", &at("finish"), Some(r#"{"state": "completed", "workerId": "w1"}"#));
    assert_eq!(ok_ours(&server, &["run", "list", "--limit", "5"], work), table("completed"));
    assert_eq!(ok_ours(&server, &["run", "list", "--source", "sdk"], work), "No runs found.\n");
    let shown = api_ok(&server, "GET", &format!("/api/public/runs/{run}"), None);
    assert_eq!((text(&shown, "metrics.reward.value"), text(&shown, "rollouts")), ("0.8".into(), "1".into()));
}

/// Push a small world with our `bench push`: its version id.
fn push_world(server: &Server, work: &Path) -> String {
    let world = work.join("scored");
    std::fs::create_dir_all(&world).unwrap();
    std::fs::write(world.join("pyproject.toml"), "[project]\nname = \"scored\"\nversion = \"0.1.0\"\n").unwrap();
    std::fs::write(world.join("main.py"), "print(1)\n").unwrap();
    field(&ok_ours(server, &["bench", "push", "scored", "-m", "first"], work), "versionId")
}

const EVALS: &str = "/api/public/benchmark-containers/evaluations";

/// An evaluation for `build`: `passed` of `graded` rewarded 1.0; finalized unless `running`.
fn evaluation(server: &Server, version: &str, build: &str, graded: usize, passed: usize, running: bool) -> String {
    let created =
        api_ok(server, "POST", EVALS, Some(&format!(r#"{{"versionId": "{version}", "model": "m1", "agentBuildId": "{build}"}}"#)));
    let id = text(&created, "evaluationId");
    let samples: Vec<String> =
        (0..graded).map(|i| format!(r#"{{"task": "t{i}", "reward": {}}}"#, if i < passed { "1.0" } else { "0.0" })).collect();
    api_ok(server, "POST", &format!("{EVALS}/{id}/samples"), Some(&format!(r#"{{"samples": [{}]}}"#, samples.join(", "))));
    if !running {
        api_ok(server, "POST", &format!("{EVALS}/{id}/finalize"), Some(r#"{"status": "COMPLETED"}"#));
    }
    id
}

fn register_build(server: &Server) -> String {
    let body = r#"{"agentId": "checkout-bot", "buildHash": "sha256:c0ffee", "semanticVer": "2.4.0", "manifest": {}, "attribution": {"source": "ci", "commitSha": "9fceb02d0ae598e95dc970b74767f19372d61af8"}}"#;
    text(&api_ok(server, "POST", "/api/public/agent-builds", Some(body)), "id")
}

#[test]
fn the_release_gate_verdicts_exit_codes_and_wait() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let work = tmp.path();
    let version = push_world(&server, work);
    let build = register_build(&server);
    let gate = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["release", "gate"];
        all.extend_from_slice(args);
        gw(&server, Path::new(GATEWAY), &all, work, env, None)
    };
    let head = |verdict: &str, rate: &str, graded: &str| {
        format!(
            "verdict    {verdict}\nagent      checkout-bot\nversion    2.4.0\nbuild      {build}\ncommit     9fceb02d0ae598e95dc970b74767f19372d61af8\n\
             pass rate  {rate}\ngraded     {graded}\nrule       needs 0.70 pass rate and at least 2 graded\n"
        )
    };
    api_ok(&server, "PUT", "/api/public/agent-builds/gate-rule", Some(r#"{"minGradedRollouts": 2}"#));

    // Untested: no run yet (exit 2); the three ways of naming the build agree.
    let untested = gate(&["--build", &build], &[]);
    assert_eq!(untested.code, 2, "{}", untested.stderr);
    assert_eq!(
        untested.stdout,
        format!("{}\n- no run has recorded this build yet: file an evaluation with agentBuildId = {build}\n", head("UNTESTED", "n/a", "0"))
    );
    assert_eq!(gate(&["--commit", "9fceb02"], &[]).stdout, untested.stdout);
    assert_eq!(gate(&["--agent", "checkout-bot", "--version", "2.4.0"], &[]).stdout, untested.stdout);

    // Refusals: two forms (client side, exit 2, no request), half a form, no such build.
    let two = gate(&["--build", &build, "--commit", "9fceb02"], &[]);
    assert_eq!(
        (two.code, two.stdout.as_str(), two.stderr.as_str()),
        (2, "", "Error: name the build one way: --build, --agent + --version, or --commit\n")
    );
    let half = gate(&["--agent", "checkout-bot"], &[]);
    assert_eq!((half.code, half.stderr.as_str()), (2, "Error: --agent and --version go together; supply both\n"));
    let missing = gate(&["--build", "bld_missing"], &[]);
    assert_eq!((missing.code, missing.stderr.as_str()), (2, "Error: no agent build 'bld_missing' in this project\n"));
    let short = gate(&["--commit", "9fc"], &[]);
    assert_eq!(short.code, 2);
    assert!(short.stderr.starts_with("Failed (HTTP 400): ") && short.stderr.contains("too short"), "{}", short.stderr);
    let (status, answer) = api(&server, "GET", &format!("/api/public/agent-builds/gate?buildId={build}&commitSha=9fceb02"), None);
    assert_eq!(status, 400, "the hub refuses two forms too: {answer:?}");
    let bad = gate(&["--build", &build, "--timeout", "0.5"], &[]);
    assert_eq!(bad.code, 2, "--timeout is at least 1 second");

    // Blocked: 1 of 2 passed (exit 1), with the reason and the run; the step summary written.
    let blocked_run = evaluation(&server, &version, &build, 2, 1, false);
    let summary = work.join("summary.md");
    let blocked = gate(&["--build", &build], &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())]);
    assert_eq!(blocked.code, 1, "{}", blocked.stderr);
    assert_eq!(
        blocked.stdout,
        format!(
            "{}\n- pass rate 0.50 in run {blocked_run} is below the threshold 0.70\n\nruns (newest first):\n  {blocked_run}  COMPLETED  world=scored  model=m1  pass=0.50  graded=2\n",
            head("BLOCKED", "0.50", "2")
        )
    );
    assert_eq!(
        std::fs::read_to_string(&summary).unwrap(),
        format!(
            "### Release gate: checkout-bot 2.4.0\n\n| | |\n|---|---|\n| verdict | BLOCKED |\n| pass rate | 0.50 |\n| graded | 2 |\n\
             | rule | 0.70 / 2 graded |\n| reason | pass rate 0.50 in run {blocked_run} is below the threshold 0.70 |\n\n"
        )
    );

    // Pass: the newest run decides (exit 0); --json is the endpoint's answer, sorted.
    let passing_run = evaluation(&server, &version, &build, 3, 3, false);
    let passed = gate(&["--agent", "checkout-bot", "--version", "2.4.0"], &[]);
    assert_eq!(passed.code, 0, "{}", passed.stderr);
    assert!(passed.stdout.starts_with(&head("PASS", "1.00", "3")), "{}", passed.stdout);
    assert!(passed.stdout.contains(&format!(
        "\nruns (newest first):\n  {passing_run}  COMPLETED  world=scored  model=m1  pass=1.00  graded=3\n  {blocked_run}  "
    )));
    let as_json = gate(&["--build", &build, "--json"], &[]);
    assert_eq!(as_json.code, 0);
    let parsed = json::parse(&as_json.stdout).unwrap().value;
    assert_eq!((text(&parsed, "gate.verdict"), text(&parsed, "gate.passRate")), ("pass".into(), "1.0".into()));
    assert!(as_json.stdout.starts_with("{\n  \"build\": {\n    \"agentId\": \"checkout-bot\",\n"), "{}", as_json.stdout);

    // --wait: a running evaluation is waited for, then judged.
    let running = evaluation(&server, &version, &build, 2, 2, true);
    let host = server.host.clone();
    let (public, secret) = (server.public.clone(), server.secret.clone());
    let finisher = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(2500));
        let response = reqwest::blocking::Client::new()
            .post(format!("{host}{EVALS}/{running}/finalize"))
            .basic_auth(public, Some(secret))
            .header("content-type", "application/json")
            .body(r#"{"status": "COMPLETED"}"#)
            .send()
            .unwrap();
        assert!(response.status().is_success());
    });
    let waited = gate(&["--build", &build, "--wait", "--interval", "1", "--timeout", "60"], &[]);
    finisher.join().unwrap();
    assert_eq!(waited.code, 0, "{}\n{}", waited.stdout, waited.stderr);
    assert!(waited.stderr.starts_with("waiting: 1 of 3 run(s) still going\n"), "{}", waited.stderr);
    assert!(waited.stdout.starts_with(&head("PASS", "1.00", "2")), "{}", waited.stdout);

    // --wait on a build no run has recorded: it times out and reports untested.
    let other = text(
        &api_ok(
            &server,
            "POST",
            "/api/public/agent-builds",
            Some(r#"{"agentId": "other-bot", "buildHash": "sha256:0ther", "semanticVer": "1.0.0"}"#),
        ),
        "id",
    );
    let timed_out = gate(&["--build", &other, "--wait", "--interval", "1", "--timeout", "1"], &[]);
    assert_eq!(timed_out.code, 2);
    assert!(timed_out.stderr.starts_with("waiting: no run has recorded this build yet\n"), "{}", timed_out.stderr);
    assert!(timed_out.stderr.ends_with("timed out after 1s; reporting the latest verdict\n"), "{}", timed_out.stderr);
}

/// `GATEWAY_AGENT_BUILD_ID`: a run filed by `gateway worlds run` counts for that build.
#[test]
fn a_world_run_is_filed_for_a_build_and_opens_its_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let work = tmp.path().join("work");
    let helpdesk = support::world(&work);
    let path = helpdesk.to_str().unwrap();
    ok_ours(&server, &["bench", "push", path, "--slug", "helpdesk"], &work);
    let build = register_build(&server);
    api_ok(&server, "PUT", "/api/public/agent-builds/gate-rule", Some(r#"{"minGradedRollouts": 2}"#));
    let env = [("GATEWAY_AGENT_BUILD_ID", build.as_str()), ("GATEWAY_EMIT_ROLLOUT_SESSIONS", "0")];
    let ran = gw(&server, Path::new(GATEWAY), &["worlds", "run", "--path", path, "--agent", "oracle", "--all-tasks"], &work, &env, None);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let gate = ours(&server, &["release", "gate", "--build", &build, "--json"], &work);
    assert_eq!(gate.code, 0, "{}\n{}", gate.stdout, gate.stderr);
    let verdict = json::parse(&gate.stdout).unwrap().value;
    assert_eq!(
        (text(&verdict, "gate.verdict"), text(&verdict, "gate.gradedRollouts"), text(&verdict, "evaluatedRuns.0.world")),
        ("pass".into(), "2".into(), "helpdesk".into())
    );
}

#[test]
fn the_original_cli_against_our_hub() {
    let Some((original, _)) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("data"));
    let work = tmp.path();
    let theirs = |args: &[&str]| gw(&server, &original, args, work, &[], None);
    let both = |args: &[&str]| -> String {
        let o = theirs(args);
        let u = ours(&server, args, work);
        assert_eq!(o.code, 0, "original {args:?}:\n{}\n{}", o.stdout, o.stderr);
        assert_eq!((u.code, u.stdout.as_str(), u.stderr.as_str()), (0, o.stdout.as_str(), o.stderr.as_str()), "ours {args:?} differs");
        o.stdout
    };

    // secrets
    let set = theirs(&["secret", "set", "SEARCH_KEY", "-v", "their-secret-value", "-d", "search"]);
    assert_eq!((set.code, set.stdout.as_str()), (0, "Secret 'SEARCH_KEY' saved (****)\n"));
    let rotated = theirs(&["secret", "set", "SEARCH_KEY", "-v", "their-rotated-value"]);
    assert_eq!((rotated.code, rotated.stdout.as_str()), (0, "Secret 'SEARCH_KEY' updated.\n"));
    let prompted = gw(&server, &original, &["secret", "set", "PROMPTED"], work, &[], Some("typed\n"));
    assert_eq!((prompted.code, prompted.stdout.as_str()), (0, "Secret value:Secret 'PROMPTED' saved (****)\n"));
    let listed = both(&["secret", "list"]);
    assert!(listed.contains("SEARCH_KEY                     agent      search\n") && !listed.contains("their-"), "{listed}");
    let deleted = theirs(&["secret", "delete", "PROMPTED"]);
    assert_eq!((deleted.code, deleted.stdout.as_str()), (0, "Secret 'PROMPTED' deleted.\n"));
    let gone = theirs(&["secret", "delete", "PROMPTED"]);
    assert_eq!(gone.code, 1);
    assert!(gone.stderr.starts_with("Failed (HTTP 404): "));

    // agents (registered as the original's deploy registers them)
    assert_eq!(both(&["agent", "list"]), "No agents registered. Run `gateway deploy` to register an agent.\n");
    let project = agent_project(&server, work);
    ok_ours(&server, &["deploy", "crm/agent:v1", "--skip-build"], &project);
    both(&["agent", "list"]);

    // datasets, validated against the agent's schema by both
    std::fs::write(work.join("tasks.json"), r#"{"tasks": [{"name": "t1", "question": "a"}, {"name": "t2", "question": "b"}]}"#).unwrap();
    std::fs::write(work.join("invalid.json"), r#"[{"name": "t1", "question": 1}, {"name": "t2"}]"#).unwrap();
    let uploaded = theirs(&["dataset", "upload", "tasks.json", "--name", "crm-v1", "--agent", "crm-agent"]);
    assert_eq!(uploaded.code, 0, "{}", uploaded.stderr);
    let dataset = after(&uploaded.stdout, "Dataset ID:");
    let mine = ours(&server, &["dataset", "upload", "tasks.json", "--name", "crm-v1", "--agent", "crm-agent"], work);
    assert_eq!((mine.code, mine.stdout.as_str()), (0, uploaded.stdout.as_str()), "the same name keeps its id");
    let (o, u) = (
        theirs(&["dataset", "upload", "invalid.json", "--name", "bad", "--agent", "crm-agent"]),
        ours(&server, &["dataset", "upload", "invalid.json", "--name", "bad", "--agent", "crm-agent"], work),
    );
    assert_eq!((o.code, o.stdout.as_str(), o.stderr.as_str()), (1, u.stdout.as_str(), u.stderr.as_str()));

    // runs
    assert_eq!(both(&["run", "list"]), "No runs found.\n");
    let started = theirs(&[
        "run",
        "start",
        "gepa",
        "--agent",
        "crm-agent",
        "--dataset",
        &dataset,
        "--name",
        "theirs",
        "--config",
        r#"{"epochs": 1}"#,
    ]);
    assert_eq!(started.code, 0, "{}", started.stderr);
    assert!(
        started.stdout.starts_with("Run started!\n")
            && started.stdout.contains("  Run #:  1\n")
            && started.stdout.ends_with("  Status: queued\n")
    );
    let (o, u) = (
        theirs(&["run", "start", "sgd", "--agent", "crm-agent", "--dataset", &dataset]),
        ours(&server, &["run", "start", "sgd", "--agent", "crm-agent", "--dataset", &dataset], work),
    );
    assert_eq!((o.code, o.stderr.as_str()), (1, u.stderr.as_str()));
    let verified = theirs(&["run", "verify", "evals", "--agent", "crm-agent"]);
    assert!(verified.code == 0 && verified.stdout.starts_with("Verify job queued: job_"), "{}", verified.stderr);
    both(&["run", "list"]);
    both(&["run", "list", "--source", "platform", "--limit", "1"]);

    // the release gate
    let version = push_world(&server, work);
    let build = register_build(&server);
    api_ok(&server, "PUT", "/api/public/agent-builds/gate-rule", Some(r#"{"minGradedRollouts": 2}"#));
    let gate_both = |args: &[&str], code: i32| {
        let mut all = vec!["release", "gate"];
        all.extend_from_slice(args);
        let (o, u) = (theirs(&all), ours(&server, &all, work));
        assert_eq!(o.code, code, "original {args:?}:\n{}\n{}", o.stdout, o.stderr);
        assert_eq!((u.code, u.stdout.as_str(), u.stderr.as_str()), (o.code, o.stdout.as_str(), o.stderr.as_str()), "ours {args:?} differs");
    };
    gate_both(&["--build", &build], 2);
    gate_both(&["--build", &build, "--commit", "9fceb02"], 2);
    gate_both(&["--build", "bld_missing"], 2);
    evaluation(&server, &version, &build, 2, 1, false);
    gate_both(&["--commit", "9fceb02d0ae5"], 1);
    evaluation(&server, &version, "sha256:c0ffee", 4, 4, false);
    gate_both(&["--agent", "checkout-bot", "--version", "2.4.0"], 0);
    gate_both(&["--build", &build, "--json"], 0);
    gate_both(&["--build", &build, "--wait", "--interval", "1", "--timeout", "5"], 0);
}
